package toolworker

import (
	"sync"
	"time"
)

// ahead holds the calls this worker claimed together with another call of
// their step (ADR 0025) whose own requests it has not seen yet. Such a
// request comes after the one that claimed them, on the same partition: it
// is acknowledged without a claim, which would find the call taken, or
// finished and report it again for nothing. It is only a saving: a request
// it has forgotten (past aheadTTL, a restart, a partition that moved) is
// claimed as any other, and refused or reported again as before.
type ahead struct {
	mu      sync.Mutex
	calls   map[string]time.Time // run id "|" call id → when claimed
	pruneAt int                  // the size at which add prunes next
}

const (
	// aheadTTL is how long an entry waits for its request, which normally
	// comes right behind the request that claimed it.
	aheadTTL = 10 * time.Minute
	// aheadPrune is the least size at which adding prunes entries past
	// aheadTTL; after a prune the next is at twice what is left, so that
	// entries that are not yet old are not scanned at every add.
	aheadPrune = 4096
)

func newAhead() *ahead { return &ahead{calls: map[string]time.Time{}, pruneAt: aheadPrune} }

// add notes that runID's callID was claimed ahead of its request at now.
func (a *ahead) add(runID, callID string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.calls) >= a.pruneAt {
		for k, at := range a.calls {
			if now.Sub(at) > aheadTTL {
				delete(a.calls, k)
			}
		}
		a.pruneAt = max(aheadPrune, 2*len(a.calls))
	}
	a.calls[runID+"|"+callID] = now
}

// take reports whether runID's callID was claimed ahead of its request,
// and forgets it.
func (a *ahead) take(runID, callID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := runID + "|" + callID
	_, ok := a.calls[k]
	delete(a.calls, k)
	return ok
}
