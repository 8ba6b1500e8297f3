package gateway

import "net/http"

// serveOpenAPI serves GET /v1/openapi.json: the OpenAPI 3.1 document of
// this API (contracts/openapi.yaml, as JSON). It needs no API key, like
// /healthz: it describes the public API and holds nothing of a
// deployment's (ADR 0057).
func (s *Server) serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(s.openapi)
}
