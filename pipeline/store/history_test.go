package store_test

import (
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/store"
)

func TestHistory_holder_after_a_step_is_the_agent_the_latest_handoff_up_to_it_named(t *testing.T) {
	h := store.History{Handoffs: map[int]string{1: "refunds", 3: "billing"}}
	for step, want := range map[int]string{0: "triage", 1: "refunds", 2: "refunds", 3: "billing", 7: "billing"} {
		if got := h.HolderAfter(step, "triage"); got != want {
			t.Errorf("HolderAfter(%d) = %q, want %q", step, got, want)
		}
	}
	if got := (store.History{}).HolderAfter(2, "triage"); got != "triage" {
		t.Errorf("with no handoff: %q, want the run's own agent", got)
	}
}
