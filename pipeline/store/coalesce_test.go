package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/testinfra"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// slowPipelines is a go-redis hook that holds every pipeline for a while,
// so that callers queue behind busy lanes, and notes the most callers one
// coalesced pipeline carried.
type slowPipelines struct {
	hold time.Duration
	most atomic.Int64
}

func (*slowPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*slowPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *slowPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for n := int64(store.Coalesced(ctx)); ; {
			most := h.most.Load()
			if n <= most || h.most.CompareAndSwap(most, n) {
				break
			}
		}
		time.Sleep(h.hold)
		return next(ctx, cmds)
	}
}

func TestStore_callers_at_the_same_time_share_a_pipeline_redis(t *testing.T) {
	t.Parallel()
	testCallersShareAPipeline(t, testinfra.RedisServerClient(t))
}

// On a cluster a coalesced pipeline holds the commands of runs on every
// primary; go-redis splits it by node.
func TestStore_callers_at_the_same_time_share_a_pipeline_cluster(t *testing.T) {
	t.Parallel()
	testCallersShareAPipeline(t, testinfra.RedisCluster(t, 3, 0).Client())
}

// Callers that come while every lane waits for Redis leave together in one
// pipeline, and each gets its own replies and its own refusals: here 64
// runs are claimed at once, then claimed again by others (each refused)
// while half of them commit (each accepted).
func testCallersShareAPipeline(t *testing.T, rdb redis.UniversalClient) {
	const n = 64
	hook := &slowPipelines{hold: 20 * time.Millisecond}
	rdb.AddHook(hook)
	st := store.New(rdb, store.WithPrefix("coalesce"))
	ctx := context.Background()
	id := func(i int) string { return fmt.Sprint("run-", i) }
	all := func(do func(i int) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = do(i) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	all(func(i int) error {
		_, ok, err := st.CreateRun(ctx, newRun(id(i)), input, t0)
		if err != nil || !ok {
			return fmt.Errorf("CreateRun(%s) = %v, %v", id(i), ok, err)
		}
		return nil
	})
	hook.most.Store(0)
	all(func(i int) error {
		owner := fmt.Sprint("w", i)
		run, err := st.ClaimStep(ctx, id(i), 0, lease(owner, at(30)), at(1))
		if err != nil || run.ID != id(i) || run.LeaseOwner != owner {
			return fmt.Errorf("ClaimStep(%s) as %s = %+v, %v", id(i), owner, run, err)
		}
		return nil
	})
	if most := hook.most.Load(); most < n/4 {
		t.Errorf("the most claims one pipeline carried: %d, want at least %d of the %d made at once", most, n/4, n)
	}
	all(func(i int) error {
		if i%2 == 0 {
			if _, err := st.ClaimStep(ctx, id(i), 0, lease("other", at(30)), at(2)); !errors.Is(err, store.ErrLeaseHeld) {
				return fmt.Errorf("ClaimStep(%s) held by w%d: %v, want ErrLeaseHeld", id(i), i, err)
			}
			return nil
		}
		run, calls, err := st.CommitStep(ctx, id(i), 0, fmt.Sprint("w", i), commitOf(fmt.Sprint("c", i)), at(2))
		if err != nil || run.ID != id(i) || len(calls) != 1 || calls[0].ID != fmt.Sprint("c", i) {
			return fmt.Errorf("CommitStep(%s) = %+v, %+v, %v", id(i), run, calls, err)
		}
		return nil
	})
}

// Under callers that come in bursts of every size, each is served and
// every lane comes free again: a lane handed to nobody, or a caller left
// queued with no lane to send it, would show here as a caller waiting past
// the deadline or a lane missing at the end.
func TestStore_callers_in_bursts_are_all_served_and_the_lanes_come_free(t *testing.T) {
	t.Parallel()
	st := store.New(testinfra.RedisServerClient(t), store.WithPrefix("lanes"))
	lanes := store.FreeLanes(st)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, _, err := st.CreateRun(ctx, newRun("r"), input, t0); err != nil {
		t.Fatal(err)
	}
	for burst := range 300 {
		var wg sync.WaitGroup
		for range 1 + burst%40 {
			wg.Go(func() {
				if msgs, err := st.Messages(ctx, "r"); err != nil || len(msgs) != len(input) {
					t.Errorf("Messages = %+v, %v", msgs, err)
				}
			})
		}
		served := make(chan struct{})
		go func() { wg.Wait(); close(served) }()
		select {
		case <-served:
		case <-ctx.Done():
			t.Fatalf("burst %d: callers still wait at the deadline", burst)
		}
	}
	if free := store.FreeLanes(st); free != lanes {
		t.Errorf("%d of %d lanes free after every caller returned", free, lanes)
	}
}

// A caller whose context has ended sends nothing and says why, in its
// commands too.
func TestStore_a_caller_whose_context_ended_sends_nothing(t *testing.T) {
	t.Parallel()
	st := store.New(testinfra.RedisServerClient(t), store.WithPrefix("ended"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := st.CreateRun(ctx, newRun("r"), input, t0); !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateRun with an ended context: %v, want context.Canceled", err)
	}
	if _, err := st.GetRun(context.Background(), "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRun after it: %v, want ErrNotFound (nothing sent)", err)
	}
}
