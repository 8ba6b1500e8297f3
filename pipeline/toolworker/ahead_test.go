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
