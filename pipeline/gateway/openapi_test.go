package gateway_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

func TestOpenAPI_the_document_is_served_without_a_key(t *testing.T) {
	h := authHarness(t)
	res := h.get("/v1/openapi.json")
	var doc map[string]any
	res.want(t, http.StatusOK, &doc)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi %v, want 3.1.0", doc["openapi"])
	}
	loaded, err := openapi3.NewLoader().LoadFromData(res.body)
	if err != nil {
		t.Fatalf("the served document does not load: %v", err)
	}
	if err := loaded.Validate(t.Context()); err != nil {
		t.Errorf("the served document is not valid OpenAPI: %v", err)
	}
}

// Every route the gateway serves is an operation of openapi.yaml, and every
// operation of openapi.yaml is a route: a route added without its document
// (or a document of a route that is gone) fails here.
func TestOpenAPI_the_document_has_every_route_and_no_other(t *testing.T) {
	h := newHarness(t)
	srv, err := gateway.New(gateway.Config{Store: h.store, Publisher: h.pub, Agents: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, p := range srv.Routes() {
		method, path, _ := strings.Cut(p, " ")
		path = strings.TrimSuffix(path, "{$}")
		if strings.HasSuffix(path, "/") && path != "/" {
			// A subtree pattern: the document names it and what follows.
			served = append(served, method+" "+path)
			path += "{rest}"
		}
		served = append(served, method+" "+anyParam(path))
	}
	var documented []string
	for path, item := range loadContract(t).doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+anyParam(path))
		}
	}
	slices.Sort(served)
	slices.Sort(documented)
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("the gateway serves %s, openapi.yaml does not describe it", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("openapi.yaml describes %s, the gateway does not serve it", r)
		}
	}
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// anyParam names every path parameter alike, so the mux's names and the
// document's need not agree.
func anyParam(path string) string { return pathParam.ReplaceAllString(path, "{}") }

// The answers no other test asks for are checked against the document too
// (by the harness, contract_test.go): the console's files, HEAD, and the
// 404s of a gateway without metrics or dead letters.
func TestOpenAPI_the_console_HEAD_and_absent_features_answer_as_documented(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/", http.StatusOK},
		{http.MethodGet, "/console/", http.StatusOK},
		{http.MethodGet, "/console/app.js", http.StatusOK},
		{http.MethodGet, "/console/nothing.js", http.StatusNotFound},
		{http.MethodHead, "/v1/runs", http.StatusOK},
		{http.MethodHead, "/v1/runs/nothing", http.StatusNotFound},
		{http.MethodGet, "/metrics", http.StatusNotFound},
		{http.MethodGet, "/v1/dead-letters", http.StatusNotFound},
	} {
		if res := h.do(c.method, c.path, "", nil); res.status != c.status {
			t.Errorf("%s %s: status %d, want %d", c.method, c.path, res.status, c.status)
		}
	}
}
