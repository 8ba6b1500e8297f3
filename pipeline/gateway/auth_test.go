package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// authKeys are the keys of the auth tests: their secret is "secret-" + name.
var authKeys = []struct {
	name   string
	tenant string
	scopes []gateway.Scope
}{
	{"writer-a", "a", []gateway.Scope{gateway.ScopeRunsWrite}},
	{"reader-a", "a", []gateway.Scope{gateway.ScopeRunsRead}},
	{"decider-a", "a", []gateway.Scope{gateway.ScopeDecisionsWrite}},
	{"all-b", "b", []gateway.Scope{gateway.ScopeRunsWrite, gateway.ScopeRunsRead, gateway.ScopeDecisionsWrite}},
	{"admin", "ops", []gateway.Scope{gateway.ScopeAdmin}},
}

func authHarness(t *testing.T) *harness {
	return newHarness(t, func(c *gateway.Config) {
		for _, k := range authKeys {
			c.Keys = append(c.Keys, gateway.Key{Name: k.name, SHA256: sha256.Sum256([]byte("secret-" + k.name)), Scopes: k.scopes, Tenant: k.tenant})
		}
	})
}

// as sends a request with the key of name ("" none, "bogus" an unknown
// one) and returns its status once the headers arrive (an event stream is
// left open otherwise).
func (h *harness) as(name, method, path, body string) int {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.url+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if name != "" {
		req.Header.Set("Authorization", "Bearer secret-"+name)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	_ = res.Body.Close()
	return res.StatusCode
}

// Every route against every key: the scope decides 403, the tenant 404,
// the key 401. Run "ra" belongs to tenant a, created with writer-a.
func TestAuth_every_route_answers_by_key_scope_and_tenant(t *testing.T) {
	h := authHarness(t)
	if code := h.as("writer-a", http.MethodPost, "/v1/runs", `{"run_id":"ra","agent":"assistant","input":"hi"}`); code != http.StatusCreated {
		t.Fatalf("create ra as writer-a: %d", code)
	}
	run := `{"agent":"assistant","input":"hi"}`
	decision := `{"call_id":"c-1","action":"resume"}`
	routes := []struct {
		method, path, body string
		want               map[string]int // key → status; keys not named get 403
	}{
		{"POST", "/v1/runs", run, map[string]int{"writer-a": 201, "all-b": 201, "admin": 201}},
		{"POST", "/v1/runs/batch", "[" + run + "]", map[string]int{"writer-a": 201, "all-b": 201, "admin": 201}},
		{"GET", "/v1/runs", "", map[string]int{"reader-a": 200, "all-b": 200, "admin": 200}},
		{"GET", "/v1/runs/ra", "", map[string]int{"reader-a": 200, "all-b": 404, "admin": 200}},
		{"GET", "/v1/runs/ra/messages", "", map[string]int{"reader-a": 200, "all-b": 404, "admin": 200}},
		{"GET", "/v1/runs/ra/events", "", map[string]int{"reader-a": 200, "all-b": 404, "admin": 200}},
		{"POST", "/v1/runs/ra/decisions", decision, map[string]int{"decider-a": 202, "all-b": 404, "admin": 202}},
		{"GET", "/v1/pending", "", map[string]int{"reader-a": 200, "all-b": 200, "admin": 200}},
		{"POST", "/v1/runs/ra/cancel", "{}", map[string]int{"writer-a": 202, "all-b": 404, "admin": 202}},
		{"GET", "/v1/export/runs", "", map[string]int{"admin": 200}},
		{"GET", "/metrics", "", map[string]int{"admin": 404}}, // admin only; this gateway collects none
	}
	for _, rt := range routes {
		for _, k := range append([]string{"", "bogus"}, names()...) {
			want, ok := rt.want[k]
			switch {
			case k == "" || k == "bogus":
				want = http.StatusUnauthorized
			case !ok:
				want = http.StatusForbidden
			}
			if got := h.as(k, rt.method, rt.path, rt.body); got != want {
				t.Errorf("%s %s with key %q: %d, want %d", rt.method, rt.path, k, got, want)
			}
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if got := h.as("", http.MethodGet, path, ""); got != http.StatusOK {
			t.Errorf("GET %s without a key: %d, want 200", path, got)
		}
	}
}

func names() []string {
	out := make([]string, len(authKeys))
	for i, k := range authKeys {
		out[i] = k.name
	}
	return out
}

// A refusal says what is wrong in the error envelope; 401 names the scheme.
func TestAuth_refusals_say_why(t *testing.T) {
	h := authHarness(t)
	h.do(http.MethodGet, "/v1/runs", "", nil).wantError(t, http.StatusUnauthorized, "unauthorized", "Authorization: Bearer")
	res := h.do(http.MethodGet, "/v1/runs", "", nil, "Authorization", "Bearer nope")
	res.wantError(t, http.StatusUnauthorized, "unauthorized", "unknown API key")
	if got := res.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
		t.Errorf("WWW-Authenticate %q", got)
	}
	h.do(http.MethodPost, "/v1/runs", "application/json", []byte(`{"agent":"assistant","input":"hi"}`), "Authorization", "Bearer secret-reader-a").
		wantError(t, http.StatusForbidden, "forbidden", `"reader-a" lacks the scope runs:write`)
}

// A key lists its tenant's runs only; admin lists every tenant's.
func TestAuth_listing_shows_the_keys_tenant_only(t *testing.T) {
	h := authHarness(t)
	for _, c := range []struct{ key, id string }{{"writer-a", "a-1"}, {"writer-a", "a-2"}, {"all-b", "b-1"}} {
		if code := h.as(c.key, http.MethodPost, "/v1/runs", `{"run_id":"`+c.id+`","agent":"assistant","input":"hi"}`); code != http.StatusCreated {
			t.Fatalf("create %s: %d", c.id, code)
		}
	}
	list := func(key string) []string {
		var out gateway.RunList
		res := h.do(http.MethodGet, "/v1/runs", "", nil, "Authorization", "Bearer secret-"+key)
		if err := json.Unmarshal(res.body, &out); err != nil || res.status != http.StatusOK {
			t.Fatalf("list as %s: %d %s", key, res.status, res.body)
		}
		var ids []string
		for _, r := range out.Runs {
			ids = append(ids, r.RunID)
		}
		return ids
	}
	if got := strings.Join(list("reader-a"), ","); got != "a-2,a-1" {
		t.Errorf("reader-a lists %s, want a-2,a-1", got)
	}
	if got := strings.Join(list("all-b"), ","); got != "b-1" {
		t.Errorf("all-b lists %s, want b-1", got)
	}
	if got := strings.Join(list("admin"), ","); got != "b-1,a-2,a-1" {
		t.Errorf("admin lists %s, want b-1,a-2,a-1", got)
	}
	// The same run_id and request from another tenant is another request.
	if code := h.as("all-b", http.MethodPost, "/v1/runs", `{"run_id":"a-1","agent":"assistant","input":"hi"}`); code != http.StatusConflict {
		t.Errorf("tenant b replaying a's run id: %d, want 409", code)
	}
}

// decided_by of an HTTP decision is the key; what the body says is a note.
func TestAuth_decided_by_is_the_keys_name(t *testing.T) {
	h := authHarness(t)
	h.as("writer-a", http.MethodPost, "/v1/runs", `{"run_id":"rd","agent":"assistant","input":"hi"}`)
	h.as("decider-a", http.MethodPost, "/v1/runs/rd/decisions", `{"call_id":"c-1","action":"resume","decided_by":"alice"}`)
	h.as("decider-a", http.MethodPost, "/v1/runs/rd/decisions", `{"call_id":"c-2","action":"resume"}`)
	h.as("writer-a", http.MethodPost, "/v1/runs/rd/cancel", `{}`)
	got := h.decisions.waitFor(t, "rd", 3)
	byCall := map[string]string{}
	for _, d := range got {
		byCall[d.CallID] = d.DecidedBy
	}
	if byCall["c-1"] != "decider-a (alice)" || byCall["c-2"] != "decider-a" || byCall[""] != "writer-a" {
		t.Errorf("decided_by %v", byCall)
	}
}
