package worker

import (
	"context"
	"sync"
	"time"
)

// WatchTick is how often the workers look for executions whose work was
// called off elsewhere (ADR 0065): a cancel stops a tool or an inference
// within about two ticks.
const WatchTick = 250 * time.Millisecond

// Watch stops a worker's executions whose work was called off elsewhere (a
// run or a call cancelled through another process), level-triggered: an
// execution runs under a context from Start, filed under a key; every tick
// the keys of the executions that have run longer than a tick are checked,
// all of them in one call of check, and the executions of each key that
// check gives a cause for are cancelled with that cause. An execution that
// ends within a tick is never checked, so work that nobody cancels costs
// no round trip. Safe for concurrent use.
type Watch[K comparable] struct {
	tick  time.Duration
	check func(ctx context.Context, keys []K) ([]error, error)
	mu    sync.Mutex
	live  map[K][]*watched
}

// watched is one execution a Watch holds.
type watched struct {
	since  time.Time
	cancel context.CancelCauseFunc
}

// NewWatch returns a Watch that checks every tick with check, which
// returns, in the order of keys, the cause to stop each key's executions
// with (nil: they go on). It checks nothing until Run is called.
func NewWatch[K comparable](tick time.Duration, check func(ctx context.Context, keys []K) ([]error, error)) *Watch[K] {
	return &Watch[K]{tick: tick, check: check, live: map[K][]*watched{}}
}

// Start returns a context for an execution of key, derived from parent,
// and the done to call when the execution is over, which cancels it.
func (w *Watch[K]) Start(parent context.Context, key K) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	e := &watched{since: time.Now(), cancel: cancel}
	w.mu.Lock()
	w.live[key] = append(w.live[key], e)
	w.mu.Unlock()
	return ctx, func() {
		w.mu.Lock()
		rest := w.live[key]
		for i, x := range rest {
			if x == e {
				rest = append(rest[:i], rest[i+1:]...)
				break
			}
		}
		if len(rest) == 0 {
			delete(w.live, key)
		} else {
			w.live[key] = rest
		}
		w.mu.Unlock()
		cancel(nil)
	}
}

// Stop cancels every execution of key now, with cause.
func (w *Watch[K]) Stop(key K, cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.live[key] {
		e.cancel(cause)
	}
}

// Run checks every tick until ctx ends. A check that fails is passed to
// failed and made again at the next tick.
func (w *Watch[K]) Run(ctx context.Context, failed func(error)) {
	every(ctx, w.tick, func() bool {
		if err := w.checkDue(ctx); err != nil && ctx.Err() == nil {
			failed(err)
		}
		return true
	})
}

// checkDue checks the keys of the executions older than a tick, if any,
// and stops those check calls off.
func (w *Watch[K]) checkDue(ctx context.Context) error {
	keys := w.due(time.Now().Add(-w.tick))
	if len(keys) == 0 {
		return nil
	}
	causes, err := w.check(ctx, keys)
	if err != nil {
		return err
	}
	for i, cause := range causes {
		if cause != nil && i < len(keys) {
			w.Stop(keys[i], cause)
		}
	}
	return nil
}

// due is the keys with an execution started at or before since.
func (w *Watch[K]) due(since time.Time) []K {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keys []K
	for k, es := range w.live {
		for _, e := range es {
			if !e.since.After(since) {
				keys = append(keys, k)
				break
			}
		}
	}
	return keys
}
