package stepworker

import (
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

func TestShares_a_tenant_is_over_its_share_only_while_the_pool_is_full_or_another_waits(t *testing.T) {
	for _, tc := range []struct {
		name          string
		held, waiting map[string]int
		full          bool
		over          bool
	}{
		{"alone, below the pool", map[string]int{"a": 7}, nil, true, false},
		{"alone, the whole pool", map[string]int{"a": 8}, nil, true, true},
		{"alone, the whole pool with room for fan-ins", map[string]int{"a": 8}, nil, false, false},
		{"at half with another holding, the pool full", map[string]int{"a": 4, "b": 4}, nil, true, true},
		{"at half with another holding, room left", map[string]int{"a": 4, "b": 1}, nil, false, false},
		{"over half while another waits", map[string]int{"a": 5}, map[string]int{"b": 1}, false, true},
		{"its own waiting requests count", map[string]int{"a": 3}, map[string]int{"a": 1, "b": 1}, false, true},
		{"below its share while another waits", map[string]int{"a": 3, "b": 1}, map[string]int{"b": 1}, true, false},
		{"a share is a slot at least", map[string]int{"a": 1}, map[string]int{"b": 1, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1, "h": 1, "i": 1}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newShares(8)
			for tenant, n := range tc.held {
				for range n {
					if !s.enter(pipeline.Run{Tenant: tenant}, false, nil) {
						t.Fatalf("setting up: %s's step %d refused", tenant, n)
					}
				}
			}
			for tenant, n := range tc.waiting {
				for range n {
					s.wait(tenant)
				}
			}
			if got := s.over("a", tc.full); got != tc.over {
				t.Fatalf("over = %v, want %v", got, tc.over)
			}
		})
	}
}

func TestShares_a_step_that_ends_wakes_the_oldest_deferred_step_not_over_its_share(t *testing.T) {
	s := newShares(3)
	a1, a2, b0 := pipeline.Run{ID: "a1", Tenant: "a"}, pipeline.Run{ID: "a2", Tenant: "a"}, pipeline.Run{ID: "b0", Tenant: "b"}
	for _, r := range []pipeline.Run{a1, a2, b0} {
		if !s.enter(r, false, nil) {
			t.Fatalf("%s refused", r.ID)
		}
	}
	for _, r := range []pipeline.Run{{ID: "a3", Tenant: "a"}, {ID: "a3", Tenant: "a"}, {ID: "b1", Tenant: "b"}} { // a3 queued once
		if next, ok := s.hold(r, true); ok {
			t.Fatalf("woke %s at once with the pool full", next.ID)
		}
	}
	for _, step := range []struct {
		ends pipeline.Run
		wake string // "" none
	}{
		{a1, ""},   // a still infers its share (1 of 3, shared with b) and b waits
		{b0, "b1"}, // b is below its share: its step goes first, though a3 is older
		{a2, "a3"},
	} {
		if next, ok := s.leave(step.ends); next.ID != step.wake || ok != (step.wake != "") {
			t.Fatalf("the end of %s woke %q (%v), want %q", step.ends.ID, next.ID, ok, step.wake)
		}
	}
	if len(s.queue) != 0 || len(s.deferred) != 0 {
		t.Fatalf("left queued: %v", s.queue)
	}
}

func TestShares_a_step_deferred_after_the_steps_that_would_wake_it_ended_is_woken_at_once(t *testing.T) {
	s := newShares(1)
	held := pipeline.Run{ID: "a1", Tenant: "a"}
	s.enter(held, false, nil)
	if _, ok := s.leave(held); ok { // before a2 is queued: it wakes nothing
		t.Fatal("woke a step with none queued")
	}
	if next, ok := s.hold(pipeline.Run{ID: "a2", Tenant: "a"}, false); !ok || next.ID != "a2" {
		t.Fatalf("woke %q (%v), want a2 itself", next.ID, ok)
	}
}

// A tenant with a request waiting and a step deferred is one tenant with
// work, not two: the others' shares are the pool divided by the tenants,
// whatever each of them has in which state.
func TestShares_a_tenant_waiting_and_deferred_counts_once(t *testing.T) {
	s := newShares(8)
	for range 3 {
		if !s.enter(pipeline.Run{Tenant: "a"}, false, nil) {
			t.Fatal("setting up: a's step refused")
		}
	}
	s.wait("b")
	count(s.deferred, "b", 1) // a step of b's in the queue, as hold leaves one
	if s.over("a", true) {
		t.Fatal("a, holding 3 of 8 slots with one other tenant, is over its share of 4")
	}
}
