package stepworker

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// A burst of fan-ins for one run: every one is answered by a reconcile
// that starts after it arrived, and far fewer reconciles run than arrived.
func TestCoalescer_answers_every_request_with_fewer_reconciles(t *testing.T) {
	c := newCoalescer()
	var runs, arrived atomic.Int64
	var lastSeen atomic.Int64 // arrivals seen by the latest reconcile when it started
	gate := make(chan struct{})
	var wg sync.WaitGroup
	reconcile := func(*view) {
		lastSeen.Store(arrived.Load())
		if runs.Add(1) == 1 {
			<-gate // the first one is slow: the others pile up behind it
		}
	}
	wg.Go(func() { arrived.Add(1); c.do("r", nil, reconcile) })
	for runs.Load() == 0 {
	}
	// Each of these is counted once do returned: it has marked the run
	// (or, wrongly, run a reconcile of its own) by then, so the gate opens
	// only after all of them are in.
	for range 50 {
		wg.Go(func() { c.do("r", nil, reconcile); arrived.Add(1) })
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
	go c.do("other", nil, func(*view) { close(done) })
	<-done
}

// The round after the running one starts from the view of the latest step
// among the results that arrived meanwhile, or reads the run when one of
// them had no view.
func TestCoalescer_the_next_round_starts_from_the_latest_view_unless_one_had_none(t *testing.T) {
	views := func(arrivals ...*view) *view {
		c := newCoalescer()
		started, gate := make(chan struct{}), make(chan struct{})
		var second *view
		rounds := 0
		done := make(chan struct{})
		go func() {
			c.do("r", &view{}, func(v *view) {
				if rounds++; rounds == 1 {
					close(started)
					<-gate
					return
				}
				second = v
			})
			close(done)
		}()
		<-started
		for _, v := range arrivals {
			c.do("r", v, func(*view) { t.Error("an arrival ran a round beside the running one") })
		}
		close(gate)
		<-done
		if rounds != 2 {
			t.Fatalf("%d rounds, want 2", rounds)
		}
		return second
	}
	v1, v2 := &view{here: true}, &view{here: true}
	if got := views(v1, v2); got != v2 {
		t.Errorf("after two results with views, the next round started from %p, want the latest %p", got, v2)
	}
	step1 := &view{Snapshot: store.Snapshot{Run: pipeline.Run{Step: 1}}}
	late := &view{Snapshot: store.Snapshot{Run: pipeline.Run{Step: 0}}}
	if got := views(step1, late); got != step1 {
		t.Errorf("after step 1's result and a late one of step 0, the next round started from %p, want step 1's %p", got, step1)
	}
	if got := views(v1, nil, v2); got != nil {
		t.Errorf("after a result without a view, the next round started from %p, want a read (nil)", got)
	}
	if got := views(nil); got != nil {
		t.Errorf("after a result without a view, the next round started from %p, want a read (nil)", got)
	}
}
