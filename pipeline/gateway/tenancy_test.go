package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// tenantsHarness is a gateway with two keys, "a" and "b", each of its own
// tenant and with every scope but admin.
func tenantsHarness(t *testing.T) *harness {
	t.Helper()
	scopes := []gateway.Scope{gateway.ScopeRunsWrite, gateway.ScopeRunsRead, gateway.ScopeDecisionsWrite}
	return newHarness(t, func(c *gateway.Config) {
		c.Keys = []gateway.Key{
			{Name: "a", SHA256: sha256.Sum256([]byte("secret-a")), Scopes: scopes, Tenant: "a"},
			{Name: "b", SHA256: sha256.Sum256([]byte("secret-b")), Scopes: scopes, Tenant: "b"},
		}
	})
}

// by sends a request with key's secret.
func (h *harness) by(key, method, path string, body any) response {
	h.t.Helper()
	var b []byte
	switch v := body.(type) {
	case nil:
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			h.t.Fatal(err)
		}
	}
	contentType := ""
	if b != nil {
		contentType = "application/json"
	}
	return h.do(method, path, contentType, b, "Authorization", "Bearer secret-"+key)
}

// A batch of another tenant's run ids creates nothing, records no batch
// and names none; a batch that mixes them holds only the runs its tenant
// owns, and reading or cancelling it never touches the others.
func TestTenancy_a_batch_holds_only_runs_its_tenant_owns(t *testing.T) {
	h := tenantsHarness(t)
	h.by("a", http.MethodPost, "/v1/runs", `{"run_id":"ra","agent":"assistant","input":"hi"}`).want(t, http.StatusCreated, nil)

	foreign := h.by("b", http.MethodPost, "/v1/runs/batch", `[{"run_id":"ra","agent":"assistant","input":"hi"}]`).
		wantError(t, http.StatusConflict, gateway.CodeConflict, "1 of 1 runs failed")
	if foreign.BatchID != "" {
		t.Errorf("a batch that created nothing is named %q", foreign.BatchID)
	}

	mixed := h.by("b", http.MethodPost, "/v1/runs/batch", `[{"run_id":"rb","agent":"assistant","input":"hi"},{"run_id":"ra","agent":"assistant","input":"hi"}]`).
		wantError(t, http.StatusConflict, gateway.CodeConflict, "1 of 2 runs failed")
	if mixed.BatchID == "" {
		t.Fatal("a batch with a run created is not named")
	}
	var v gateway.BatchView
	h.by("b", http.MethodGet, "/v1/batches/"+mixed.BatchID, nil).want(t, http.StatusOK, &v)
	if v.Total != 1 || v.Counts["created"] != 1 {
		t.Errorf("b's batch shows %+v, want its one run", v)
	}
	var c gateway.BatchCancelResponse
	h.by("b", http.MethodPost, "/v1/batches/"+mixed.BatchID+"/cancel", "{}").want(t, http.StatusAccepted, &c)
	if c.Cancelled != 1 {
		t.Errorf("b's cancel of its batch cancelled %d runs, want 1", c.Cancelled)
	}
	h.decisions.waitFor(t, "rb", 1)
	if got := h.decisions.of("ra"); len(got) != 0 {
		t.Errorf("tenant b's batch cancelled a's run: %+v", got)
	}

	// b's own run, sent again with another request, conflicts: the batch
	// does not name it either.
	h.by("b", http.MethodPost, "/v1/runs", `{"run_id":"rb-own","agent":"assistant","input":"hi"}`).want(t, http.StatusCreated, nil)
	own := h.by("b", http.MethodPost, "/v1/runs/batch", `[{"run_id":"rb-own","agent":"assistant","input":"other"},{"run_id":"rc","agent":"assistant","input":"hi"}]`).
		wantError(t, http.StatusConflict, gateway.CodeConflict, "1 of 2 runs failed")
	h.by("b", http.MethodGet, "/v1/batches/"+own.BatchID, nil).want(t, http.StatusOK, &v)
	if v.Total != 1 {
		t.Errorf("a batch whose create of b's own run conflicted shows %+v, want only the run it created", v)
	}
}

// A batch record that names another tenant's run (as one written before
// batches were checked could) shows and cancels only the caller's runs;
// naming none of them, it is not found.
func TestTenancy_a_batch_route_leaves_out_runs_of_other_tenants(t *testing.T) {
	h := tenantsHarness(t)
	h.by("a", http.MethodPost, "/v1/runs", `{"run_id":"ra","agent":"assistant","input":"hi"}`).want(t, http.StatusCreated, nil)
	h.by("b", http.MethodPost, "/v1/runs", `{"run_id":"rb","agent":"assistant","input":"hi"}`).want(t, http.StatusCreated, nil)
	ctx := context.Background()
	if err := h.store.SaveBatch(ctx, "batch-foreign", store.Batch{Tenant: "b", RunIDs: []string{"ra"}}); err != nil {
		t.Fatal(err)
	}
	if err := h.store.SaveBatch(ctx, "batch-mixed", store.Batch{Tenant: "b", RunIDs: []string{"ra", "rb"}}); err != nil {
		t.Fatal(err)
	}

	h.by("b", http.MethodGet, "/v1/batches/batch-foreign", nil).wantError(t, http.StatusNotFound, gateway.CodeNotFound)
	h.by("b", http.MethodPost, "/v1/batches/batch-foreign/cancel", "{}").wantError(t, http.StatusNotFound, gateway.CodeNotFound)
	h.by("a", http.MethodGet, "/v1/batches/batch-mixed", nil).wantError(t, http.StatusNotFound, gateway.CodeNotFound)

	var v gateway.BatchView
	h.by("b", http.MethodGet, "/v1/batches/batch-mixed", nil).want(t, http.StatusOK, &v)
	if v.Total != 1 || v.Counts["created"] != 1 {
		t.Errorf("b's mixed batch shows %+v, want its one run", v)
	}
	h.by("b", http.MethodPost, "/v1/batches/batch-mixed/cancel", "{}").want(t, http.StatusAccepted, nil)
	h.decisions.waitFor(t, "rb", 1)
	if got := h.decisions.of("ra"); len(got) != 0 {
		t.Errorf("tenant b cancelled a's run through a batch: %+v", got)
	}
}

// Every chat route that reaches a run through a chat's id answers another
// tenant's chat as none: a new message, a later turn, approval answers and
// an AG-UI run are 404 and create nothing; a resume is 204, as for a chat
// that does not exist (the AI SDK's answer for nothing to resume).
func TestTenancy_another_tenants_chat_is_not_found(t *testing.T) {
	h := tenantsHarness(t)
	if status, _, _ := h.openChat(chatBody("ca", userMsg("hi")), "secret-a"); status != http.StatusOK {
		t.Fatalf("a's chat: %d", status)
	}
	answer := map[string]any{"role": "assistant", "parts": []any{map[string]any{
		"type": "dynamic-tool", "toolCallId": "call_0_0", "state": "approval-responded",
		"approval": map[string]any{"id": "call_0_0@1700000000000-3", "approved": true}}}}
	aguiUser := map[string]any{"id": "m1", "role": "user", "content": "hi"}
	cases := []struct {
		name, path string
		body       any
	}{
		{"a message on the chat's id", "/v1/ai-sdk/chat", chatBody("ca", userMsg("hi"))},
		{"another message", "/v1/ai-sdk/chat", chatBody("ca", userMsg("mine"))},
		{"the next turn", "/v1/ai-sdk/chat", chatBody("ca", userMsg("hi"), map[string]any{"role": "assistant", "parts": []any{}}, userMsg("more"))},
		{"approval answers", "/v1/ai-sdk/chat", chatBody("ca", userMsg("hi"), answer)},
		{"an AG-UI run on the thread", "/v1/ag-ui/run", map[string]any{"threadId": "ca", "runId": "r1", "messages": []any{aguiUser},
			"forwardedProps": map[string]any{"agent": "assistant"}}},
		{"an AG-UI resume on the thread", "/v1/ag-ui/run", map[string]any{"threadId": "ca", "runId": "r2", "messages": []any{aguiUser},
			"resume": []any{map[string]any{"interruptId": "call_0_0@1700000000000-3", "status": "resolved"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.by("b", http.MethodPost, c.path, c.body).wantError(t, http.StatusNotFound, gateway.CodeNotFound, "chat ca")
		})
	}
	if _, err := h.store.GetRun(context.Background(), "ca~2"); err == nil {
		t.Error("another tenant's message created a turn of a's chat")
	}
	if got := h.decisions.of("ca"); len(got) != 0 {
		t.Errorf("another tenant answered a's approvals: %+v", got)
	}
	unknown := h.by("b", http.MethodGet, "/v1/ai-sdk/chat/nothing-here/stream", nil)
	foreign := h.by("b", http.MethodGet, "/v1/ai-sdk/chat/ca/stream", nil)
	if foreign.status != http.StatusNoContent || foreign.status != unknown.status || len(foreign.body) != 0 {
		t.Errorf("resume of another tenant's chat: %d %q; of an unknown chat: %d", foreign.status, foreign.body, unknown.status)
	}
}
