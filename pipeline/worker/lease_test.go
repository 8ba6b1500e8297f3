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
