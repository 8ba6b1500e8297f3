package stepworker

import "sync"

// coalescer runs at most one fan-in reconcile per run at a time in this
// process. The tool results of a step's calls arrive in bursts; each asks
// the same question of the same run ("is the step over?"), and the answer
// reads every call of the step. A result that arrives while the run's
// reconcile runs only marks it to run once more when it ends: no result
// goes unanswered (the last reconcile starts after the last result was
// written), and a burst of n results costs a few reconciles instead of n.
//
// A result may carry a view of its step (ADR 0022). The round after the
// running one starts from the view of the latest step among the results
// that arrived meanwhile (the last of them for that step: a redelivered
// result's view of a step before must not hide a newer one, since a round
// from an aged view is refused and ends) when every one of them carried a
// view, and reads the run when any did not. The fan-in that ends a step runs the next step in its round, so
// the next step's result often arrives before the round is over: that
// result's view is not lost.
type coalescer struct {
	mu   sync.Mutex
	runs map[string]*again // run id → what the next round starts from
}

// again is a run's next round: whether there is one, and its view (nil:
// read the run).
type again struct {
	due  bool
	view *view
}

func newCoalescer() *coalescer { return &coalescer{runs: map[string]*again{}} }

// do runs reconcile for runID from v (nil: reading the run), now or, if
// one already runs for the run, once more after it (once for however many
// arrived meanwhile). It returns at once when it leaves the work to the
// running one.
func (c *coalescer) do(runID string, v *view, reconcile func(v *view)) {
	c.mu.Lock()
	if next, ok := c.runs[runID]; ok {
		switch {
		case !next.due:
			next.view = v
		case next.view == nil || v == nil:
			next.view = nil // an arrival without a view: the next round reads
		case v.Run.Step >= next.view.Run.Step:
			next.view = v // not a late duplicate's view of a step before
		}
		next.due = true
		c.mu.Unlock()
		return
	}
	next := &again{}
	c.runs[runID] = next
	c.mu.Unlock()
	for {
		reconcile(v)
		c.mu.Lock()
		if !next.due {
			delete(c.runs, runID)
			c.mu.Unlock()
			return
		}
		v = next.view
		*next = again{}
		c.mu.Unlock()
	}
}
