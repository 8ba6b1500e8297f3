package gateway_test

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// The console's files need no key (they hold no data) and come with a
// content security policy; the API behind them still does.
func TestConsole_files_are_public_and_locked_down(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) {
		c.Keys = []gateway.Key{{Name: "ops", SHA256: sha256.Sum256([]byte("secret-ops")), Scopes: []gateway.Scope{gateway.ScopeAdmin}}}
	})
	for path, want := range map[string]string{"/": `<script src="/console/app.js"`, "/console/app.js": "function follow(", "/console/style.css": ".status.done"} {
		res := h.get(path)
		if res.status != http.StatusOK || !strings.Contains(string(res.body), want) {
			t.Fatalf("GET %s: %d, %.80s", path, res.status, res.body)
		}
		if csp := res.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Fatalf("GET %s: CSP %q", path, csp)
		}
	}
	if res := h.get("/console/nothing.js"); res.status != http.StatusNotFound {
		t.Fatalf("an unknown console file: %d", res.status)
	}
	h.get("/v1/runs").wantError(t, http.StatusUnauthorized, gateway.CodeUnauthorized)
	h.get("/v1/dead-letters").wantError(t, http.StatusUnauthorized, gateway.CodeUnauthorized)
}

// A batch is named in the answer of POST /v1/runs/batch, the same runs
// name the same batch, and GET /v1/batches/{id} counts its runs by status;
// another tenant's batch is not found.
func TestBatches_count_their_runs(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) {
		c.Keys = []gateway.Key{
			{Name: "a", SHA256: sha256.Sum256([]byte("secret-a")), Scopes: []gateway.Scope{gateway.ScopeRunsWrite, gateway.ScopeRunsRead}, Tenant: "a"},
			{Name: "b", SHA256: sha256.Sum256([]byte("secret-b")), Scopes: []gateway.Scope{gateway.ScopeRunsRead}, Tenant: "b"},
		}
	})
	body := `[{"run_id":"b-1","agent":"assistant","input":"x"},{"run_id":"b-2","agent":"assistant","input":"y"}]`
	var first, again gateway.BatchResponse
	for _, out := range []*gateway.BatchResponse{&first, &again} {
		h.do(http.MethodPost, "/v1/runs/batch", "application/json", []byte(body), "Authorization", "Bearer secret-a").want(t, http.StatusCreated, out)
	}
	if first.BatchID == "" || again.BatchID != first.BatchID || len(first.RunIDs) != 2 {
		t.Fatalf("batches %+v and %+v", first, again)
	}
	var v gateway.BatchView
	h.do(http.MethodGet, "/v1/batches/"+first.BatchID, "", nil, "Authorization", "Bearer secret-a").want(t, http.StatusOK, &v)
	if v.Total != 2 || v.Counts["created"] != 2 || v.BatchID != first.BatchID {
		t.Fatalf("batch view %+v", v)
	}
	h.do(http.MethodGet, "/v1/batches/"+first.BatchID, "", nil, "Authorization", "Bearer secret-b").wantError(t, http.StatusNotFound, gateway.CodeNotFound)
	h.do(http.MethodGet, "/v1/batches/nope", "", nil, "Authorization", "Bearer secret-a").wantError(t, http.StatusNotFound, gateway.CodeNotFound)
}
