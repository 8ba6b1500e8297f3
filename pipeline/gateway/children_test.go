package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// A parent's GET /v1/runs/{id} lists its child runs that are written, in
// call order, with their status; a child's names its parent and the call
// that waits for it.
func TestRuns_a_parent_lists_its_children_and_a_child_names_its_parent(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.post("/v1/runs", map[string]any{"run_id": "p", "agent": "assistant", "input": "go"}).want(t, http.StatusCreated, nil)
	child := func(id string) pipeline.ToolCall {
		return parked(id, "ask_helper", `{}`, pipeline.Parking{Ticket: "t-" + id, Reason: "waits for child run p." + id + " of agent helper", ResumeMode: pipeline.ResumeUseDecisionAsResult})
	}
	h.parkThreadCalls(t, "p", child("a"), child("b"), child("c"))
	now := time.Now()
	for _, c := range []struct {
		call    string
		started bool
	}{{"c", true}, {"a", true}, {"b", false}} { // b is registered, not written
		if err := h.store.MarkChild(ctx, "p", c.call, c.started); err != nil {
			t.Fatal(err)
		}
		if !c.started {
			continue
		}
		run := pipeline.Run{ID: pipeline.ChildRunID("p", c.call), Agent: "helper", ParentRunID: "p", ParentCallID: c.call, Depth: 1}
		if _, _, err := h.store.StartRun(ctx, run, []pipeline.Message{{Role: pipeline.RoleUser, Content: "{}"}}, now, now); err != nil {
			t.Fatal(err)
		}
	}

	var parent gateway.RunView
	h.get("/v1/runs/p").want(t, http.StatusOK, &parent)
	want := []gateway.ChildView{{RunID: "p.a", CallID: "a", Status: pipeline.RunCreated}, {RunID: "p.c", CallID: "c", Status: pipeline.RunCreated}}
	if len(parent.Children) != len(want) || parent.Children[0] != want[0] || parent.Children[1] != want[1] || parent.ParentRunID != "" {
		t.Fatalf("parent's children %+v (parent %q), want %+v", parent.Children, parent.ParentRunID, want)
	}
	var kid gateway.RunView
	h.get("/v1/runs/p.a").want(t, http.StatusOK, &kid)
	if kid.ParentRunID != "p" || kid.ParentCallID != "a" || kid.Children != nil {
		t.Fatalf("child names parent %q call %q, children %+v", kid.ParentRunID, kid.ParentCallID, kid.Children)
	}
}
