package app

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// serveMetrics serves the stack's metrics at http://addr/metrics (a
// worker's --metrics) until the returned stop is called. With auth.keys
// configured, a scrape needs an admin key, as the gateway's GET /metrics
// does: only the admin keys are read (a worker needs only their
// environment variables), and a configuration with keys but no admin one
// is refused, since no scrape could pass.
func (s *Stack) serveMetrics(addr string) (stop func(), err error) {
	var admins config.Auth
	for _, k := range s.Config.Auth.Keys {
		if slices.Contains(k.Scopes, config.ScopeAdmin) {
			admins.Keys = append(admins.Keys, k)
		}
	}
	if s.Config.Auth.Enabled() && !admins.Enabled() {
		return nil, errors.New("metrics: auth.keys has no key with the admin scope, which a scrape of --metrics needs")
	}
	keys, err := apiKeys(admins)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	h, err := gateway.Guard(keys, gateway.ScopeAdmin, s.Metrics.Handler())
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return func() { _ = srv.Close() }, nil
}
