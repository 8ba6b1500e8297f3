package stepworker

import "sync"

// coalescer runs at most one fan-in reconcile per run at a time in this
// process. The tool results of a step's calls arrive in bursts; each asks
// the same question of the same run ("is the step over?"), and the answer
// reads every call of the step. A result that arrives while the run's
// reconcile runs only marks it to run once more when it ends, with the
// latest step it was told about: no result goes unanswered (the last
// reconcile starts after the last result was written), and a burst of n
// results costs a few reconciles instead of n.
type coalescer struct {
	mu   sync.Mutex
	runs map[string]*pending
}

type pending struct {
	again bool
	step  int
}

func newCoalescer() *coalescer { return &coalescer{runs: map[string]*pending{}} }

// do runs reconcile(step) for runID, now or, if one already runs for the
// run, after it (then once for however many arrived meanwhile, with the
// highest step). It returns at once when it leaves the work to the running
// one.
func (c *coalescer) do(runID string, step int, reconcile func(step int)) {
	c.mu.Lock()
	if p, ok := c.runs[runID]; ok {
		p.again, p.step = true, max(p.step, step)
		c.mu.Unlock()
		return
	}
	p := &pending{}
	c.runs[runID] = p
	c.mu.Unlock()
	for {
		reconcile(step)
		c.mu.Lock()
		if !p.again {
			delete(c.runs, runID)
			c.mu.Unlock()
			return
		}
		p.again, step = false, max(step, p.step)
		c.mu.Unlock()
	}
}
