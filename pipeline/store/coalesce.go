package store

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The store's lanes to Redis (ADR 0028).
const (
	// coalesceLanes is how many pipelines the store has in flight at most.
	// While every lane waits for Redis, what the callers send meanwhile
	// queues and leaves with the next lane that comes free, in one
	// pipeline.
	coalesceLanes = 4
	// coalesceMost is how many callers' commands one pipeline carries at
	// most.
	coalesceMost = 128
)

// coalescer sends the commands of the store's callers to Redis, those of
// callers that come at the same time in one pipeline (ADR 0028): Redis
// then reads and answers them with one system call each way, and the
// client writes and reads once, instead of once per caller.
//
// A caller that finds a lane free sends its commands itself, at once, as
// it would alone. One that finds every lane busy queues; the caller whose
// pipeline comes back first hands its lane to the first in the queue,
// which sends what has queued by then, its own commands first, and hands
// the lane on in turn. So each caller sends at most one pipeline, and no
// goroutine runs on its own.
//
// Each caller's commands stay together and in their order, as a pipeline
// of their own would send them; callers that come at the same time have no
// order among them, as before. Nothing here waits on Redis for long: the
// store never sends a blocking command through it.
type coalescer struct {
	rdb   redis.UniversalClient
	mu    sync.Mutex
	free  int        // lanes not sending; while any is, the queue is empty
	queue []*request // callers waiting for a lane, first come first
}

// request is one caller's commands, and how the caller is told that they
// have their replies (false) or that it holds a lane now and sends (true).
type request struct {
	cmds []redis.Cmder
	wake chan bool
}

// coalescedKey is the context key under which a coalesced pipeline carries
// the number of callers whose commands it holds (Coalesced).
type coalescedKey struct{}

// Coalesced is the number of callers whose commands the pipeline that a
// go-redis hook sees with ctx carries: 0 when it is not the store's
// coalesced pipeline. A hook that counts the round trips callers wait for
// counts that many (internal/bench).
func Coalesced(ctx context.Context) int {
	n, _ := ctx.Value(coalescedKey{}).(int)
	return n
}

func newCoalescer(rdb redis.UniversalClient) *coalescer {
	return &coalescer{rdb: rdb, free: coalesceLanes}
}

// do sends cmds and returns once they have their replies, with the first
// command's error as a go-redis pipeline returns it (redis.Nil included).
// A ctx that has ended sends nothing; once queued, the commands are waited
// for whatever ctx does (the client's read timeout bounds the wait), as
// go-redis waits for a reply it has asked for.
func (c *coalescer) do(ctx context.Context, cmds []redis.Cmder) error {
	if len(cmds) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		for _, cmd := range cmds {
			cmd.SetErr(err)
		}
		return err
	}
	r := &request{cmds: cmds, wake: make(chan bool, 1)}
	c.mu.Lock()
	if c.free > 0 {
		c.free--
		c.mu.Unlock()
	} else {
		c.queue = append(c.queue, r)
		c.mu.Unlock()
		if lead := <-r.wake; !lead {
			return firstErr(cmds)
		}
	}
	c.send(r)
	return firstErr(cmds)
}

// send sends r's commands and what has queued, holding a lane, then hands
// the lane to the next caller in the queue or frees it.
func (c *coalescer) send(r *request) {
	c.mu.Lock()
	n := min(len(c.queue), coalesceMost-1)
	batch := make([]*request, 0, 1+n)
	batch = append(append(batch, r), c.queue[:n]...)
	c.queue = c.queue[n:]
	c.mu.Unlock()

	ctx := context.WithValue(context.Background(), coalescedKey{}, len(batch))
	p := c.rdb.Pipeline()
	for _, b := range batch {
		for _, cmd := range b.cmds {
			_ = p.Process(ctx, cmd)
		}
	}
	_, _ = p.Exec(ctx) // each command has its own result or error
	for _, b := range batch[1:] {
		b.wake <- false
	}

	c.mu.Lock()
	if len(c.queue) == 0 {
		c.free++
		c.mu.Unlock()
		return
	}
	next := c.queue[0]
	c.queue = c.queue[1:]
	c.mu.Unlock()
	next.wake <- true
}

// firstErr is the first command's error, as a go-redis pipeline returns it.
func firstErr(cmds []redis.Cmder) error {
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return err
		}
	}
	return nil
}
