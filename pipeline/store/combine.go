package store

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// pipelinesInFlight is how many pipelines a combiner has on their way to
// its Redis at once. The fewer, the more commands share a round trip, and
// the less CPU a step costs Redis and this process; but with one, Redis
// idles while this process reads a pipeline's replies and sends the next.
// On the hot-path workload two carried the most steps a second, with 16 %
// less of Redis's CPU a step; eight did better only where one client
// process, on one core, is all Redis serves (docs/benchmarks.md,
// thirteenth session).
const pipelinesInFlight = 2

// A combiner sends the commands of many goroutines to one Redis in shared
// pipelines (flat combining, ADR 0044). A caller that finds fewer than
// pipelinesInFlight pipelines on their way sends its commands at once, as
// it would on its own; one that does not waits in a queue, and when a
// pipeline comes back the queue goes out as the next, sent by the first
// caller in it. Under load a round trip then carries the scripts of many
// runs: Redis reads and writes its socket once for them all, and so does
// this process. No goroutine of its own, nothing to close.
//
// The commands of one caller go out in its order, one after the other in
// one pipeline, but never as a transaction: other callers' commands may
// come between them, as they may between the commands of a pipeline on a
// connection of its own.
type combiner struct {
	rdb    redis.UniversalClient
	mu     sync.Mutex
	flying int      // pipelines on their way
	queue  []*rider // callers waiting for the next
}

// A rider is a caller's commands waiting in a combiner's queue. wake tells
// it that their replies are read, or, with lead set, that it sends lead
// (the queue it is first in).
type rider struct {
	ctx  context.Context
	cmds []redis.Cmder
	wake chan struct{}
	lead []*rider
}

var riders = sync.Pool{New: func() any { return &rider{wake: make(chan struct{}, 1)} }}

// process sends cmds, in order, and returns once their replies (or
// errors) are in them. A caller whose ctx ends while it waits in the queue
// has its commands fail with ctx's error, unsent; once its pipeline is on
// its way it waits for the replies, as a command that has been written
// does. A pipeline of several callers' commands is sent with the first
// caller's context values but none of its deadline or cancellation: one
// caller giving up does not fail the others.
func (c *combiner) process(ctx context.Context, cmds []redis.Cmder) {
	c.mu.Lock()
	if c.flying < pipelinesInFlight {
		c.flying++
		c.mu.Unlock()
		c.send(ctx, cmds)
		c.land()
		return
	}
	r := riders.Get().(*rider)
	r.ctx, r.cmds = ctx, cmds
	c.queue = append(c.queue, r)
	c.mu.Unlock()
	<-r.wake
	if group := r.lead; group != nil {
		r.lead = nil
		c.sendFor(group)
		c.land()
	}
	r.ctx, r.cmds = nil, nil
	riders.Put(r)
}

// sendFor sends the commands of the riders in group, the first of which
// calls it, and wakes the others once their replies are in.
func (c *combiner) sendFor(group []*rider) {
	n := 0
	for _, r := range group {
		n += len(r.cmds)
	}
	cmds := make([]redis.Cmder, 0, n)
	going := 0
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			for _, cmd := range r.cmds {
				cmd.SetErr(err)
			}
			continue
		}
		cmds = append(cmds, r.cmds...)
		going++
	}
	if going > 0 {
		c.send(context.WithValue(context.WithoutCancel(group[0].ctx), ridersKey{}, going), cmds)
	}
	for _, r := range group[1:] {
		r.wake <- struct{}{}
	}
}

// send sends cmds: alone, a command goes as itself.
func (c *combiner) send(ctx context.Context, cmds []redis.Cmder) {
	if len(cmds) == 1 {
		_ = c.rdb.Process(ctx, cmds[0])
		return
	}
	_, _ = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		return p.BatchProcess(ctx, cmds...)
	})
}

// land ends a pipeline's flight: the queue, if any, goes next, sent by
// the first rider in it (the flight goes on); else one fewer is on its way.
func (c *combiner) land() {
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.flying--
		c.mu.Unlock()
		return
	}
	group := c.queue
	c.queue = nil
	c.mu.Unlock()
	group[0].lead = group
	group[0].wake <- struct{}{}
}

type ridersKey struct{}

// Riders is, for a Redis hook, how many callers' round trips the pipeline
// it is given carries: above 1 when the store combined them (ADR 0044), 1
// for a pipeline of one caller. It is 0 for a pipeline the store did not
// send (a hook counting round trips can take such a pipeline as one).
func Riders(ctx context.Context) int {
	n, _ := ctx.Value(ridersKey{}).(int)
	return n
}

// combinerFor is the combiner of the Redis that holds key: the store's
// own, or on a cluster the one of the primary that serves key's slot
// (pipelines to one node do not wait for another's). A pipeline still
// goes through the cluster client, which follows a slot that has moved.
func (s *Store) combinerFor(ctx context.Context, key string) *combiner {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok || key == "" {
		return &s.combined
	}
	node, err := cc.MasterForKey(ctx, key)
	if err != nil { // the cluster client tells when it sends
		return &s.combined
	}
	if c, ok := s.nodes.Load(node); ok {
		return c.(*combiner)
	}
	c, _ := s.nodes.LoadOrStore(node, &combiner{rdb: s.rdb})
	return c.(*combiner)
}
