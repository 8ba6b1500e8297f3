package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/worker"
)

var errGone = errors.New("gone")

func isGone(err error) bool { return errors.Is(err, errGone) }

func TestKeep_renews_until_stopped(t *testing.T) {
	var renewals atomic.Int32
	stop := worker.KeepLease(context.Background(), 3*time.Millisecond, func(context.Context) error {
		renewals.Add(1)
		return nil
	}, isGone, func() { t.Error("lost a lease that was renewed") })
	deadline := time.Now().Add(5 * time.Second)
	for renewals.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	stop()
	if n := renewals.Load(); n < 3 {
		t.Fatalf("renewed %d times, want ≥ 3", n)
	}
}

func TestKeep_gives_up_once_the_lease_is_lost_and_retries_other_errors(t *testing.T) {
	var calls atomic.Int32
	lost := make(chan struct{})
	stop := worker.KeepLease(context.Background(), 3*time.Millisecond, func(context.Context) error {
		if calls.Add(1) == 1 {
			return errors.New("redis hiccup") // retried
		}
		return errGone
	}, isGone, func() { close(lost) })
	defer stop()
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("onLost was never called")
	}
	if calls.Load() != 2 {
		t.Fatalf("renew called %d times, want 2 (one hiccup, then lost)", calls.Load())
	}
}

func TestKeep_stop_ends_a_renewal_under_way_and_waits_for_it(t *testing.T) {
	started := make(chan struct{})
	var renewals, running atomic.Int32
	stop := worker.KeepLease(context.Background(), 3*time.Millisecond, func(ctx context.Context) error {
		running.Add(1)
		defer running.Add(-1)
		if renewals.Add(1) == 1 {
			close(started)
			<-ctx.Done() // a renewal that only stop ends
		}
		return ctx.Err()
	}, isGone, func() { t.Error("lost a lease that was renewed") })
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("no renewal started")
	}
	stop()
	if n := running.Load(); n != 0 {
		t.Fatalf("stop returned with %d renewals under way", n)
	}
	stop() // again: nothing
}

// BenchmarkKeepLease_short_work is what keeping a lease costs work that
// ends before its first renewal: most steps and tool calls.
func BenchmarkKeepLease_short_work(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	renew := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		worker.KeepLease(ctx, 30*time.Second, renew, isGone, func() {})()
	}
}
