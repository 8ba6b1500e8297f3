package stepworker

import "sync"

// coalescer runs at most one fan-in reconcile per run at a time in this
// process. The tool results of a step's calls arrive in bursts; each asks
// the same question of the same run ("is the step over?"), and the answer
// reads every call of the step. A result that arrives while the run's
// reconcile runs only marks it to run once more when it ends: no result
// goes unanswered (the last reconcile starts after the last result was
// written, and reads the run), and a burst of n results costs a few
// reconciles instead of n.
type coalescer struct {
	mu   sync.Mutex
	runs map[string]*bool // run id → whether another round is due
}

func newCoalescer() *coalescer { return &coalescer{runs: map[string]*bool{}} }

// do runs reconcile for runID now or, if one already runs for the run,
// once more after it (once for however many arrived meanwhile). It
// returns at once when it leaves the work to the running one.
func (c *coalescer) do(runID string, reconcile func()) {
	c.mu.Lock()
	if due, ok := c.runs[runID]; ok {
		*due = true
		c.mu.Unlock()
		return
	}
	due := new(bool)
	c.runs[runID] = due
	c.mu.Unlock()
	for {
		reconcile()
		c.mu.Lock()
		if !*due {
			delete(c.runs, runID)
			c.mu.Unlock()
			return
		}
		*due = false
		c.mu.Unlock()
	}
}
