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
// stop waits for the renewing goroutine to end; calling it again does nothing.
func KeepLease(ctx context.Context, period time.Duration, renew func(context.Context) error, lost func(error) bool, onLost func()) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		every(ctx, max(period/3, time.Millisecond), func() bool {
			if err := renew(ctx); err != nil && lost(err) {
				onLost()
				return false
			}
			return true
		})
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
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
