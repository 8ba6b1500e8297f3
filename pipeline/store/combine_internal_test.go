package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/testinfra"
)

// gate is a go-redis hook that holds the round trips, the first ones until
// first is closed and the others until then is, and records what each
// carried: how many commands and callers (Riders). A new connection's own
// commands (HELLO, CLIENT SETINFO) pass.
type gate struct {
	first, then chan struct{}
	holdFirst   int
	mu          sync.Mutex
	trips       []trip
	arrived     chan struct{} // a round trip reached the hook
}

type trip struct{ cmds, riders int }

func newGate(holdFirst int) *gate {
	return &gate{first: make(chan struct{}), then: make(chan struct{}), holdFirst: holdFirst, arrived: make(chan struct{}, 1000)}
}

func (g *gate) record(ctx context.Context, n int) {
	g.mu.Lock()
	g.trips = append(g.trips, trip{n, max(Riders(ctx), 1)})
	hold := g.then
	if len(g.trips) <= g.holdFirst {
		hold = g.first
	}
	g.mu.Unlock()
	g.arrived <- struct{}{}
	<-hold
}

func (g *gate) recorded() []trip {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]trip(nil), g.trips...)
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !connecting(cmd) {
			g.record(ctx, 1)
		}
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !connecting(cmds[0]) {
			g.record(ctx, len(cmds))
		}
		return next(ctx, cmds)
	}
}

func connecting(cmd redis.Cmder) bool { return cmd.Name() == "hello" || cmd.Name() == "client" }

// waitQueued waits until c's queue holds n callers.
func waitQueued(t *testing.T, c *combiner, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		got := len(c.queue)
		c.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// The callers that come while pipelinesInFlight round trips are on their
// way go out together in the next, each getting its own replies, in its
// order; a caller whose context ends while it waits sends nothing and gets
// its context's error; a failing command fails alone; and once the
// pipeline is on its way its first caller giving up fails no one.
func TestCombiner_sends_the_callers_that_wait_in_one_pipeline(t *testing.T) {
	rdb := testinfra.RedisServerClient(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, "a string", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	g := newGate(pipelinesInFlight)
	rdb.AddHook(g)
	c := &combiner{rdb: rdb}

	// Two callers alone fill the flights; each goes as its own command.
	var wg sync.WaitGroup
	first := make([]*redis.IntCmd, pipelinesInFlight)
	for i := range first {
		first[i] = redis.NewIntCmd(ctx, "incr", "first:"+strconv.Itoa(i))
		wg.Go(func() { c.process(ctx, []redis.Cmder{first[i]}) })
		<-g.arrived
	}
	// Then ten, each with two commands of its own key; one whose context
	// ends while it waits; one whose second command fails.
	type caller struct {
		incr *redis.IntCmd
		get  *redis.StringCmd
	}
	callers := make([]caller, 10)
	leaderCtx, cancelLeader := context.WithCancel(ctx)
	defer cancelLeader()
	for i := range callers {
		key := "k:" + strconv.Itoa(i)
		callers[i] = caller{redis.NewIntCmd(ctx, "incrby", key, i+1), redis.NewStringCmd(ctx, "get", key)}
		cctx := ctx
		if i == 0 {
			cctx = leaderCtx // the first in the queue sends it
		}
		wg.Go(func() { c.process(cctx, []redis.Cmder{callers[i].incr, callers[i].get}) })
		waitQueued(t, c, i+1)
	}
	gone, cancel := context.WithCancel(ctx)
	goneCmd := redis.NewIntCmd(ctx, "incr", "gone")
	wg.Go(func() { c.process(gone, []redis.Cmder{goneCmd}) })
	waitQueued(t, c, len(callers)+1)
	cancel()
	failing := redis.NewIntCmd(ctx, "incr", "a string")
	fine := redis.NewIntCmd(ctx, "incr", "fine")
	wg.Go(func() { c.process(ctx, []redis.Cmder{fine, failing}) })
	waitQueued(t, c, len(callers)+2)

	close(g.first) // the two first come back; the queue goes, once
	<-g.arrived
	cancelLeader() // on its way: the others do not care
	close(g.then)
	wg.Wait()

	trips := g.recorded()
	want := []trip{{1, 1}, {1, 1}, {2*len(callers) + 2, len(callers) + 1}}
	if fmt.Sprint(trips) != fmt.Sprint(want) {
		t.Fatalf("round trips (commands, callers) %v, want %v", trips, want)
	}
	for i, cmd := range first {
		if v, err := cmd.Result(); err != nil || v != 1 {
			t.Errorf("first caller %d: %v, %v", i, v, err)
		}
	}
	for i, cl := range callers {
		n, err := cl.incr.Result()
		v, gerr := cl.get.Result()
		if err != nil || gerr != nil || n != int64(i+1) || v != strconv.Itoa(i+1) {
			t.Errorf("caller %d: incrby %v, %v; get %q, %v: want %d", i, n, err, v, gerr, i+1)
		}
	}
	if !errors.Is(goneCmd.Err(), context.Canceled) {
		t.Errorf("a caller gone while it waited: %v, want its context's error", goneCmd.Err())
	}
	if n, err := rdb.Exists(ctx, "gone").Result(); err != nil || n != 0 {
		t.Errorf("a caller gone while it waited sent its command: exists %d, %v", n, err)
	}
	if failing.Err() == nil || fine.Err() != nil {
		t.Errorf("a failing command: %v; the one before it: %v", failing.Err(), fine.Err())
	}
}

// Many callers at once on a cluster: each primary's commands share its
// own round trips, every caller gets its replies, and fewer round trips go
// than the callers waited for.
func TestCombiner_on_a_cluster_combines_each_primarys_commands(t *testing.T) {
	cl := testinfra.RedisCluster(t, 3, 0)
	rdb := cl.Client()
	s := New(rdb)
	trips := &countTrips{}
	rdb.AddHook(trips)
	ctx := context.Background()
	const callers, each = 64, 30
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			key := "{run" + strconv.Itoa(i) + "}:n"
			for j := 1; j <= each; j++ {
				incr, get := redis.NewIntCmd(ctx, "incr", key), redis.NewStringCmd(ctx, "get", key)
				incr.SetFirstKeyPos(1)
				get.SetFirstKeyPos(1)
				s.combinerFor(ctx, key).process(ctx, []redis.Cmder{incr, get})
				if n, err := incr.Result(); err != nil || n != int64(j) || get.Val() != strconv.Itoa(j) {
					errs <- fmt.Errorf("%s: incr %d, %v; get %q, %v; want %d", key, n, err, get.Val(), get.Err(), j)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	nodes := 0
	s.nodes.Range(func(any, any) bool { nodes++; return true })
	if nodes != 3 {
		t.Errorf("%d combiners, want one for each of the 3 primaries", nodes)
	}
	if waited, wire := trips.waited.Load(), trips.wire.Load(); waited != callers*each || wire >= waited {
		t.Errorf("%d round trips waited for (want %d), %d on the wire: none shared", waited, callers*each, wire)
	}
}

// countTrips is a go-redis hook that counts the round trips the callers
// waited for and those on the wire.
type countTrips struct{ waited, wire atomic.Int64 }

func (c *countTrips) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (c *countTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.waited.Add(1)
		c.wire.Add(1)
		return next(ctx, cmd)
	}
}

func (c *countTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.waited.Add(int64(max(Riders(ctx), 1)))
		c.wire.Add(1)
		return next(ctx, cmds)
	}
}
