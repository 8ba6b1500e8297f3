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
// stop ends a renewal under way (its context) and waits for it; calling it
// again does nothing.
//
// Nothing is made before the first tick but a timer: most work (a step, a
// no-op tool) is over long before it, and a goroutine, a ticker and a
// context of its own each cost it for nothing.
func KeepLease(ctx context.Context, period time.Duration, renew func(context.Context) error, lost func(error) bool, onLost func()) (stop func()) {
	k := &keeper{tick: max(period/3, time.Millisecond)}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.timer = time.AfterFunc(k.tick, func() { k.renew(ctx, renew, lost, onLost) })
	return k.stop
}

// keeper is the state of one KeepLease.
type keeper struct {
	tick    time.Duration
	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
	cancel  context.CancelFunc // of the renewal under way; nil: none
	over    chan struct{}      // closed when the renewal under way ends
}

// renew makes one renewal, at a tick, and sets the timer for the next.
func (k *keeper) renew(ctx context.Context, renew func(context.Context) error, lost func(error) bool, onLost func()) {
	k.mu.Lock()
	if k.stopped || ctx.Err() != nil {
		k.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	over := make(chan struct{})
	k.cancel, k.over = cancel, over
	k.mu.Unlock()
	defer close(over)
	err := renew(ctx)
	cancel()
	gone := err != nil && lost(err)
	if gone {
		onLost()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cancel = nil
	if !gone && !k.stopped {
		k.timer.Reset(k.tick)
	}
}

// stop is KeepLease's stop.
func (k *keeper) stop() {
	k.mu.Lock()
	k.stopped = true
	k.timer.Stop()
	var over chan struct{} // the renewal under way's, if one is
	if k.cancel != nil {
		k.cancel()
		over = k.over
	}
	k.mu.Unlock()
	if over != nil {
		<-over
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
