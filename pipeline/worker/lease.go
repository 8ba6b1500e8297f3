package worker

import (
	"context"
	"sync"
	"time"
)

// KeepLease keeps a claim alive while slow work runs: it calls renew every
// period/3 until the returned stop is called or ctx ends. When renew reports
// an error for which lost returns true, KeepLease calls
// onLost once and stops renewing; other errors are retried at the next tick.
// stop waits for a renewal under way to end; calling it again does nothing.
//
// Nothing runs before the first tick: most work (a step, a no-op tool) is
// over long before it, so a timer, not a goroutine and a ticker, waits for
// it.
func KeepLease(ctx context.Context, period time.Duration, renew func(context.Context) error, lost func(error) bool, onLost func()) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	tick := max(period/3, time.Millisecond)
	var mu sync.Mutex // held by a renewal, so that stop waits for it
	var t *time.Timer
	mu.Lock()
	t = time.AfterFunc(tick, func() {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if err := renew(ctx); err != nil && lost(err) {
			onLost()
			return
		}
		t.Reset(tick)
	})
	mu.Unlock()
	return func() {
		cancel()
		mu.Lock()
		t.Stop()
		mu.Unlock()
	}
}

// every calls fn every period until ctx ends or fn returns false.
func every(ctx context.Context, period time.Duration, fn func() (again bool)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !fn() {
				return
			}
		}
	}
}
