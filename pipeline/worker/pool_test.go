package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/worker"
)

func TestPool_never_runs_more_than_its_size(t *testing.T) {
	p := worker.NewPool(3)
	var running, peak atomic.Int32
	release, started := make(chan struct{}), make(chan struct{}, 3)
	for i := 0; i < 3; i++ {
		slot, err := p.Take(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		slot.Go(func() {
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
		})
	}
	for i := 0; i < 3; i++ {
		<-started
	}
	// The pool is full: a fourth Take must wait, so with a cancelled context it gives up.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Take(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Take on a full pool = %v, want context.Canceled", err)
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

func TestPool_a_released_slot_is_free_again_once(t *testing.T) {
	p := worker.NewPool(1)
	slot, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slot.Release()
	slot.Release() // a second release must not free a slot someone else holds
	other, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Take(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Take after a double release = %v, want the pool full (context.Canceled)", err)
	}
	other.Release()
}

func TestClaims_never_repeat_an_owner(t *testing.T) {
	c := worker.NewClaims("w1")
	seen := map[string]bool{}
	for range 1000 {
		o := c.Next()
		if seen[o] {
			t.Fatalf("owner %s handed out twice", o)
		}
		seen[o] = true
	}
}

func TestPool_a_reserve_takes_only_free_slots_and_gives_back_the_rest(t *testing.T) {
	p := worker.NewPool(4)
	held, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := p.TryTake(10) // three are free: it takes them, without waiting
	if r.Len() != 3 || p.Busy() != 4 {
		t.Fatalf("reserve of %d, %d busy; want 3, 4", r.Len(), p.Busy())
	}
	if empty := p.TryTake(1); empty.Len() != 0 {
		t.Fatalf("a full pool reserved %d", empty.Len())
	}
	done := make(chan struct{})
	r.Slot().Go(func() { close(done) })
	<-done
	p.Wait()
	if r.Len() != 2 || p.Busy() != 3 {
		t.Fatalf("after one slot ran: reserve of %d, %d busy; want 2, 3", r.Len(), p.Busy())
	}
	r.Release()
	r.Release() // nothing left to give back
	if r.Len() != 0 || p.Busy() != 1 {
		t.Fatalf("after the release: reserve of %d, %d busy; want 0, 1", r.Len(), p.Busy())
	}
	held.Release()
}
