package stepworker

import (
	"sync"

	"github.com/stepwise-run/stepwise/pipeline"
)

// shares keeps a share of this worker's pool for every tenant with work
// here (ADR 0048), on by default. A tenant's share is the pool's slots
// divided among the tenants that infer here, wait here for a slot, or have
// a step deferred here for their share, at least one slot. A tenant whose
// steps inferring here, with its requests waiting here for a slot, are its
// share or more is over it while the pool is full or another tenant waits:
// its step is then deferred (not run, and not left waiting for a slot in
// front of the other tenants' requests) and woken when a step ends here
// and its tenant is no longer over.
//
// It counts a request from before it waits for a slot (when it names its
// tenant) to the end of its inference; fan-ins are not counted (they hold
// a slot for a few round trips, and one that would run the next step in
// place asks first). Safe for concurrent use.
type shares struct {
	mu       sync.Mutex
	size     int
	held     map[string]int  // tenant → its steps inferring here
	waiting  map[string]int  // tenant → its requests waiting here for a slot
	deferred map[string]int  // tenant → its steps in queue
	queue    []pipeline.Run  // steps deferred for their share, oldest first
	queued   map[string]bool // waiterOf of the steps in queue
}

func newShares(size int) *shares {
	return &shares{size: max(size, 1), held: map[string]int{}, waiting: map[string]int{}, deferred: map[string]int{}, queued: map[string]bool{}}
}

// over reports whether tenant is over its share, full saying whether the
// pool has no free slot.
func (s *shares) over(tenant string, full bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overLocked(tenant, full)
}

func (s *shares) overLocked(tenant string, full bool) bool {
	others := map[string]bool{} // the other tenants with work here
	for t := range s.held {
		others[t] = true
	}
	othersWait := false
	for _, waits := range []map[string]int{s.waiting, s.deferred} {
		for t := range waits {
			others[t], othersWait = true, othersWait || t != tenant
		}
	}
	delete(others, tenant)
	active := 1 + len(others)
	return s.held[tenant]+s.waiting[tenant] >= max(1, s.size/active) && (full || othersWait)
}

// enter counts a claimed step of run's tenant as inferring here, in the
// place of its request's ticket (nil: none), unless the tenant is over its
// share; it reports whether it did.
func (s *shares) enter(run pipeline.Run, full bool, t *ticket) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.giveBackLocked()
	if s.overLocked(run.Tenant, full) {
		return false
	}
	count(s.held, run.Tenant, 1)
	return true
}

// leave ends a step that enter counted, and returns the oldest step
// deferred for its share whose tenant is no longer over it, to be woken
// (the slot the step held is about to be free).
func (s *shares) leave(run pipeline.Run) (pipeline.Run, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	count(s.held, run.Tenant, -1)
	return s.nextLocked(false)
}

// nextLocked takes the oldest step deferred for its share whose tenant is
// not over it out of the queue.
func (s *shares) nextLocked(full bool) (pipeline.Run, bool) {
	over := map[string]bool{}
	for i, r := range s.queue {
		o, seen := over[r.Tenant]
		if !seen {
			o = s.overLocked(r.Tenant, full)
			over[r.Tenant] = o
		}
		if !o {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			delete(s.queued, waiterOf(r))
			count(s.deferred, r.Tenant, -1)
			return r, true
		}
	}
	return pipeline.Run{}, false
}

// count adds n to m[key], deleting it at 0.
func count(m map[string]int, key string, n int) {
	if m[key] += n; m[key] <= 0 {
		delete(m, key)
	}
}

// wait counts a request of tenant as waiting for a slot (and then for
// its claim) until enter takes its place or the returned ticket is given
// back. An unknown tenant ("") is not counted.
func (s *shares) wait(tenant string) *ticket {
	if tenant == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	count(s.waiting, tenant, 1)
	return &ticket{s: s, tenant: tenant}
}

// ticket is a request counted as waiting (shares.wait).
type ticket struct {
	s      *shares
	tenant string
	done   bool
}

// giveBack stops counting the request as waiting; again, it does nothing.
func (t *ticket) giveBack() {
	if t == nil {
		return
	}
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	t.giveBackLocked()
}

func (t *ticket) giveBackLocked() {
	if t != nil && !t.done {
		t.done = true
		count(t.s.waiting, t.tenant, -1)
	}
}

// hold queues a step deferred for its tenant's share, once, to be woken by
// leave. The steps that ended while it was being deferred woke none for
// its tenant: hold returns the step to wake now, if one is not over its
// share with the pool as full says.
func (s *shares) hold(run pipeline.Run, full bool) (pipeline.Run, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := waiterOf(run); !s.queued[k] {
		s.queued[k] = true
		count(s.deferred, run.Tenant, 1)
		s.queue = append(s.queue, pipeline.Run{ID: run.ID, Step: run.Step, Tenant: run.Tenant, Trace: run.Trace})
	}
	return s.nextLocked(full)
}
