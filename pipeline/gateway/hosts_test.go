package gateway_test

import (
	"crypto/sha256"
	"net/http"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// A keyless gateway answers only to the names it serves: a page that
// reaches it under a name of its own (DNS rebinding) sends that name as
// Host and as Origin, and is refused before anything runs.
func TestHosts_a_keyless_gateway_refuses_a_host_it_does_not_serve(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) { c.AllowedHosts = []string{"Stepwise.LAN"} })
	body := []byte(`{"run_id":"rebound","agent":"assistant","input":"hi"}`)
	h.do(http.MethodPost, "/v1/runs", "application/json", body, "Host", "evil.example:8080", "Origin", "http://evil.example:8080").
		wantError(t, http.StatusForbidden, gateway.CodeForbidden, `host "evil.example:8080"`, "gateway.allowed_hosts")
	h.do(http.MethodGet, "/v1/runs", "", nil, "Host", "evil.example").wantError(t, http.StatusForbidden, gateway.CodeForbidden)
	h.do(http.MethodGet, "/v1/runs", "", nil, "Host", "localhost.evil.example").wantError(t, http.StatusForbidden, gateway.CodeForbidden)
	if n, _ := h.steps.count("rebound"); n != 0 {
		t.Fatalf("%d steps published for a refused run", n)
	}

	for _, host := range []string{"localhost:8080", "LOCALHOST", "localhost.", "app.localhost:3000", "127.0.0.1:8080", "[::1]:8080", "10.0.0.5", "stepwise.lan:8080"} {
		if res := h.do(http.MethodGet, "/v1/runs", "", nil, "Host", host); res.status != http.StatusOK {
			t.Errorf("Host %s: %d %s, want 200", host, res.status, res.body)
		}
	}
}

// With API keys the Host is not checked: a rebound page has no key.
func TestHosts_a_gateway_with_keys_serves_any_host(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) {
		c.Keys = []gateway.Key{{Name: "ops", SHA256: sha256.Sum256([]byte("secret-ops")), Scopes: []gateway.Scope{gateway.ScopeAdmin}}}
	})
	if res := h.do(http.MethodGet, "/v1/runs", "", nil, "Host", "gateway.example", "Authorization", "Bearer secret-ops"); res.status != http.StatusOK {
		t.Fatalf("a key on another host: %d %s", res.status, res.body)
	}
}
