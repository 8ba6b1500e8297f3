package workpool_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stepwise-run/stepwise/internal/workpool"
)

func TestPool_never_runs_more_than_its_size(t *testing.T) {
	p := workpool.New(3)
	var running, peak atomic.Int32
	release, started := make(chan struct{}), make(chan struct{}, 3)
	for i := 0; i < 3; i++ {
		if err := p.Go(context.Background(), func() {
			n := running.Add(1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			started <- struct{}{}
			<-release
			running.Add(-1)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		<-started
	}
	// The pool is full: a fourth Go must wait, so with a cancelled context it gives up.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Go(ctx, func() { t.Error("ran past the pool size") }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Go on a full pool = %v, want context.Canceled", err)
	}
	if p.Busy() != 3 {
		t.Fatalf("Busy = %d, want 3", p.Busy())
	}
	close(release)
	p.Wait()
	if peak.Load() != 3 {
		t.Fatalf("peak concurrency = %d, want 3", peak.Load())
	}
}
