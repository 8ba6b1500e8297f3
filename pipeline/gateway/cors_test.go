package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// What a web page on another origin can make a visitor's browser send
// without a preflight: a text/plain POST. It is refused, and nothing runs.
func TestCORS_a_cross_origin_text_plain_post_is_refused(t *testing.T) {
	h := newHarness(t)
	body := []byte(`{"run_id":"csrf","agent":"assistant","input":"hi"}`)
	h.do(http.MethodPost, "/v1/runs", "text/plain", body, "Origin", "http://evil.example").
		wantError(t, http.StatusForbidden, "forbidden", "origin http://evil.example may not call this API")
	h.do(http.MethodPost, "/v1/runs/csrf/cancel", "", nil, "Origin", "http://evil.example").
		wantError(t, http.StatusForbidden, "forbidden")
	// Even declared JSON (which a page could send only after a preflight).
	h.do(http.MethodPost, "/v1/runs", "application/json", body, "Origin", "http://evil.example").
		wantError(t, http.StatusForbidden, "forbidden")
	h.do(http.MethodGet, "/v1/runs/csrf", "", nil).wantError(t, http.StatusNotFound, "not_found")
	if n, _ := h.steps.count("csrf"); n != 0 {
		t.Fatalf("%d steps published for a refused run", n)
	}
	// A read from another origin is served without CORS headers, so the
	// page cannot read it; the gateway's own pages are same-origin.
	res := h.do(http.MethodGet, "/v1/runs", "", nil, "Origin", "http://evil.example")
	if res.status != http.StatusOK || res.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("cross-origin GET: %d, Access-Control-Allow-Origin %q", res.status, res.header.Get("Access-Control-Allow-Origin"))
	}
	self := "http://" + strings.TrimPrefix(h.url, "http://")
	h.do(http.MethodPost, "/v1/runs", "application/json", body, "Origin", self).want(t, http.StatusCreated, nil)
}

func TestCORS_an_allowed_origin_gets_its_preflight_and_headers(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) { c.CORSOrigins = []string{"https://console.example.com"} })
	res := h.do(http.MethodOptions, "/v1/runs", "", nil, "Origin", "https://console.example.com",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
	if res.status != http.StatusNoContent || res.header.Get("Access-Control-Allow-Origin") != "https://console.example.com" ||
		!strings.Contains(res.header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: %d %v", res.status, res.header)
	}
	h.do(http.MethodOptions, "/v1/runs", "", nil, "Origin", "https://other.example.com", "Access-Control-Request-Method", "POST").
		wantError(t, http.StatusForbidden, "forbidden")
	res = h.do(http.MethodPost, "/v1/runs", "application/json", []byte(`{"agent":"assistant","input":"hi"}`), "Origin", "https://console.example.com")
	if res.status != http.StatusCreated || res.header.Get("Access-Control-Allow-Origin") != "https://console.example.com" {
		t.Fatalf("allowed POST: %d %v", res.status, res.header)
	}
}
