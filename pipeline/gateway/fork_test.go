package gateway_test

import (
	"crypto/sha256"
	"net/http"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// twoTenants is a gateway with a key for tenant a and one for tenant b.
func twoTenants(t *testing.T) *harness {
	t.Helper()
	rw := []gateway.Scope{gateway.ScopeRunsWrite, gateway.ScopeRunsRead}
	return newHarness(t, func(c *gateway.Config) {
		c.Keys = []gateway.Key{
			{Name: "a", SHA256: sha256.Sum256([]byte("secret-a")), Scopes: rw, Tenant: "a"},
			{Name: "b", SHA256: sha256.Sum256([]byte("secret-b")), Scopes: rw, Tenant: "b"},
		}
	})
}

// A fork names its step, of a run its caller may see, that has a whole
// history: each other request is refused with what is wrong.
func TestFork_refuses_a_missing_step_another_tenants_run_and_a_step_without_history(t *testing.T) {
	h := twoTenants(t)
	as := func(key, path, body string) response {
		return h.do(http.MethodPost, path, "application/json", []byte(body), "Authorization", "Bearer "+key)
	}
	as("secret-a", "/v1/runs", `{"run_id":"r-a","agent":"assistant","input":"x"}`).want(t, http.StatusCreated, nil)

	as("secret-a", "/v1/runs/r-a/fork", `{}`).wantError(t, http.StatusBadRequest, gateway.CodeInvalidRequest, "from_step is missing")
	as("secret-a", "/v1/runs/r-a/fork", `{"from_step":0,"colour":"red"}`).wantError(t, http.StatusBadRequest, gateway.CodeInvalidRequest, "colour")
	as("secret-b", "/v1/runs/r-a/fork", `{"from_step":0}`).wantError(t, http.StatusNotFound, gateway.CodeNotFound)
	as("secret-a", "/v1/runs/nope/fork", `{"from_step":0}`).wantError(t, http.StatusNotFound, gateway.CodeNotFound)
	as("secret-a", "/v1/runs/r-a/fork", `{"from_step":0}`).wantError(t, http.StatusBadRequest, gateway.CodeInvalidRequest, "no complete step to fork from")
}

// A re-run's filter is GET /v1/runs's: a bad field is refused as there,
// one that selects every run is refused, and a run it names must be the
// caller's.
func TestRerun_refuses_a_bad_or_empty_filter_and_runs_of_another_tenant(t *testing.T) {
	h := newHarness(t)
	h.createRun(map[string]any{"run_id": "r-1", "agent": "assistant", "input": "x"})

	h.post("/v1/runs/rerun", `{"filter":{}}`).wantError(t, http.StatusBadRequest, gateway.CodeInvalidRequest)
	h.post("/v1/runs/rerun", `{"filter":{"termination":"exploded","since":"yesterday"}}`).wantError(t, http.StatusBadRequest, gateway.CodeInvalidRequest)
	h.get("/v1/runs?termination=exploded").wantError(t, http.StatusBadRequest, gateway.CodeInvalidRequest)
	h.post("/v1/runs/rerun", `{"filter":{"run_ids":["r-1","nope"]}}`).wantError(t, http.StatusNotFound, gateway.CodeNotFound, "nope")

	var out gateway.RerunResponse
	h.post("/v1/runs/rerun", `{"filter":{"run_ids":["r-1"],"status":"done"}}`).want(t, http.StatusAccepted, &out)
	if out.Requested != 0 {
		t.Fatalf("a re-run of no done run requested %d", out.Requested)
	}
	h.post("/v1/runs/rerun", `{"filter":{"run_ids":["r-1"]}}`).want(t, http.StatusAccepted, &out)
	if out.Requested != 1 || h.pub.count(h.names.RunRequests()) != 1 {
		t.Fatalf("a re-run of r-1: %+v, %d requests published", out, h.pub.count(h.names.RunRequests()))
	}

	// Without a key to sign its requests, the gateway cannot vouch for a
	// tenant's re-run on Kafka.
	tt := twoTenants(t)
	tt.do(http.MethodPost, "/v1/runs", "application/json", []byte(`{"run_id":"r-a","agent":"assistant","input":"x"}`), "Authorization", "Bearer secret-a").want(t, http.StatusCreated, nil)
	tt.do(http.MethodPost, "/v1/runs/rerun", "application/json", []byte(`{"filter":{"run_ids":["r-a"]}}`), "Authorization", "Bearer secret-a").
		wantError(t, http.StatusConflict, gateway.CodeConflict, "gateway_producer")
}
