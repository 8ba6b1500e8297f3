package stepworker

import (
	"sync"
	"sync/atomic"
	"testing"
)

// A burst of fan-ins for one run: every one is answered by a reconcile
// that starts after it arrived, and far fewer reconciles run than arrived.
func TestCoalescer_answers_every_request_with_fewer_reconciles(t *testing.T) {
	c := newCoalescer()
	var runs, arrived atomic.Int64
	var lastSeen atomic.Int64 // arrivals seen by the latest reconcile when it started
	gate := make(chan struct{})
	var wg sync.WaitGroup
	reconcile := func() {
		lastSeen.Store(arrived.Load())
		if runs.Add(1) == 1 {
			<-gate // the first one is slow: the others pile up behind it
		}
	}
	wg.Go(func() { arrived.Add(1); c.do("r", reconcile) })
	for runs.Load() == 0 {
	}
	// Each of these is counted once do returned: it has marked the run
	// (or, wrongly, run a reconcile of its own) by then, so the gate opens
	// only after all of them are in.
	for range 50 {
		wg.Go(func() { c.do("r", reconcile); arrived.Add(1) })
	}
	for arrived.Load() < 51 {
	}
	close(gate)
	wg.Wait()
	if n := runs.Load(); n != 2 {
		t.Fatalf("%d reconciles for 51 requests, want 2 (the running one and one after it)", n)
	}
	if lastSeen.Load() != 51 {
		t.Fatalf("the last reconcile started before the last request (%d of 51)", lastSeen.Load())
	}
	// Another run is not held up by this one.
	done := make(chan struct{})
	go c.do("other", func() { close(done) })
	<-done
}
