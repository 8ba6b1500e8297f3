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
	s := newShares(2)
	a1, a2 := pipeline.Run{ID: "a1", Tenant: "a"}, pipeline.Run{ID: "a2", Tenant: "a"}
	for _, r := range []pipeline.Run{a1, a2} {
		if !s.enter(r, false, nil) {
			t.Fatalf("%s refused", r.ID)
		}
	}
	s.hold(pipeline.Run{ID: "a3", Tenant: "a"})
	s.hold(pipeline.Run{ID: "a3", Tenant: "a"}) // queued once
	s.hold(pipeline.Run{ID: "b1", Tenant: "b"})
	// a still infers its share (1 of 2) and b waits: b's step goes first.
	for _, want := range []string{"b1", "a3"} {
		next, ok := s.leave(a1)
		if !ok || next.ID != want {
			t.Fatalf("woke %q (%v), want %s", next.ID, ok, want)
		}
		a1 = a2
	}
	c := pipeline.Run{ID: "c1", Tenant: "c"}
	s.enter(c, false, nil)
	if next, ok := s.leave(c); ok {
		t.Fatalf("woke %s again", next.ID)
	}
}
