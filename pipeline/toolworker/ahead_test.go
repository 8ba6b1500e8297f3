package toolworker

import (
	"strconv"
	"testing"
	"time"
)

func TestAhead_a_request_claimed_ahead_is_skipped_once(t *testing.T) {
	a := newAhead()
	now := time.Now()
	a.add("r1", "c2", now)
	if a.take("r1", "c1") || a.take("r2", "c2") {
		t.Fatal("skipped a request that was not claimed ahead")
	}
	if !a.take("r1", "c2") {
		t.Fatal("the request claimed ahead was not skipped")
	}
	if a.take("r1", "c2") {
		t.Fatal("its redelivery was skipped too: it must be claimed (and refused, or reported again)")
	}
}

func TestAhead_forgets_entries_past_their_ttl_once_it_is_big(t *testing.T) {
	a := newAhead()
	old := time.Now()
	for i := range aheadPrune {
		a.add("r", strconv.Itoa(i), old)
	}
	a.add("r", "new", old.Add(aheadTTL+time.Second))
	if len(a.calls) != 1 || !a.take("r", "new") {
		t.Fatalf("%d entries left, want the new one alone", len(a.calls))
	}
}

// Entries that are all young are not scanned again at every add: the next
// prune waits until the set has doubled.
func TestAhead_does_not_rescan_young_entries_at_every_add(t *testing.T) {
	a := newAhead()
	now := time.Now()
	for i := range aheadPrune {
		a.add("r", strconv.Itoa(i), now)
	}
	a.add("r", "one more", now) // prunes, finds nothing old
	if a.pruneAt != 2*aheadPrune {
		t.Fatalf("next prune at %d entries, want %d", a.pruneAt, 2*aheadPrune)
	}
	a.add("r", "old", now.Add(-2*aheadTTL))
	for i := range a.pruneAt - len(a.calls) + 1 { // the add that finds it full prunes
		a.add("r", "n"+strconv.Itoa(i), now.Add(aheadTTL/2))
	}
	if _, ok := a.calls["r|old"]; ok {
		t.Fatal("the entry past its TTL outlived the prune at twice the size")
	}
}
