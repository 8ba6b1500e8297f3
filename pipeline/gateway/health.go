package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// Health is the answer of GET /healthz and of a passing GET /readyz.
type Health struct {
	Status string `json:"status"`
}

// healthz serves GET /healthz: the process answers; nothing else is checked.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, Health{Status: "ok"})
}

// readyz serves GET /readyz: 200 when the store answers a ping and the extra
// Ready check passes, else 503 naming each check that failed. All checks
// share ReadyTimeout.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ReadyTimeout)
	defer cancel()
	var failed []string
	if err := s.cfg.Store.Ping(ctx); err != nil {
		failed = append(failed, fmt.Sprintf("redis: %v", err))
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(ctx); err != nil {
			failed = append(failed, fmt.Sprintf("ready check: %v", err))
		}
	}
	if len(failed) > 0 {
		s.log.WarnContext(ctx, "not ready", "failed", strings.Join(failed, "; "))
		ae := apiErr(http.StatusServiceUnavailable, CodeUnavailable, "not ready: "+strings.Join(failed, "; "))
		ae.body.Error.Details = failed
		writeError(w, ae)
		return
	}
	writeJSON(w, http.StatusOK, Health{Status: "ok"})
}

// serveMetrics serves GET /metrics: the process's Prometheus metrics.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		writeError(w, apiErr(http.StatusNotFound, CodeNotFound, "metrics are not collected by this gateway"))
		return
	}
	s.cfg.Metrics.Handler().ServeHTTP(w, r)
}
