package gateway

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/stepwise-run/stepwise/pipeline"
)

// A Scope is a right an API key grants; ScopeAdmin grants every other one
// on every tenant's runs.
type Scope string

// The scopes, as the configuration names them.
const (
	ScopeRunsWrite      Scope = "runs:write"
	ScopeRunsRead       Scope = "runs:read"
	ScopeDecisionsWrite Scope = "decisions:write"
	ScopeAdmin          Scope = "admin"
)

// Key is one API key the gateway takes: the SHA-256 of the secret a client
// sends as "Authorization: Bearer <key>", who it is (Name, written as
// decided_by of its decisions), what it may do and whose runs it sees.
type Key struct {
	Name   string
	SHA256 [sha256.Size]byte
	Scopes []Scope
	Tenant string // "" is pipeline.DefaultTenant
}

// Principal is who a request acts as. With no keys configured every request
// is the open principal: every scope, the default tenant, no name.
type Principal struct {
	Name   string
	Tenant string
	scopes []Scope
}

// may reports whether p holds scope (admin holds every one).
func (p Principal) may(scope Scope) bool {
	return slices.Contains(p.scopes, scope) || slices.Contains(p.scopes, ScopeAdmin)
}

// seesAll reports whether p acts on every tenant's runs.
func (p Principal) seesAll() bool { return slices.Contains(p.scopes, ScopeAdmin) }

// owns reports whether p may see and act on a run of tenant (the store
// reads a run stored without one as pipeline.DefaultTenant).
func (p Principal) owns(tenant string) bool {
	return p.seesAll() || p.Tenant == tenant
}

var openPrincipal = Principal{Tenant: pipeline.DefaultTenant, scopes: []Scope{ScopeAdmin}}

type principalKey struct{}

// principalOf returns who r acts as (authenticate put it there).
func principalOf(r *http.Request) Principal {
	if p, ok := r.Context().Value(principalKey{}).(Principal); ok {
		return p
	}
	return openPrincipal
}

// keyring finds the key of a presented secret by its SHA-256. Comparing
// digests through a map leaks nothing an attacker can use: the map is keyed
// by a hash of the secret, not by the secret.
type keyring map[[sha256.Size]byte]Principal

func newKeyring(keys []Key) (keyring, error) {
	ring := keyring{}
	for _, k := range keys {
		if _, dup := ring[k.SHA256]; dup {
			return nil, fmt.Errorf("gateway: keys %q and another one are the same secret", k.Name)
		}
		tenant := k.Tenant
		if tenant == "" {
			tenant = pipeline.DefaultTenant
		}
		ring[k.SHA256] = Principal{Name: k.Name, Tenant: tenant, scopes: slices.Clone(k.Scopes)}
	}
	return ring, nil
}

// open reports whether the gateway takes requests without a key.
func (k keyring) open() bool { return len(k) == 0 }

// authenticate puts the request's principal in its context, or answers
// 401. The health checks need no key.
func (s *Server) authenticate(next http.Handler) http.Handler { return s.keys.authenticate(next) }

// Guard returns h behind keys, as the gateway guards its routes: with no
// keys, h as it is; with keys, a request needs "Authorization: Bearer
// <key>" of a key holding scope (401 without a known key, 403 without the
// scope). The workers' --metrics endpoints use it with ScopeAdmin, like
// the gateway's GET /metrics. Two keys with the same secret are an error.
func Guard(keys []Key, scope Scope, h http.Handler) (http.Handler, error) {
	ring, err := newKeyring(keys)
	if err != nil {
		return nil, err
	}
	return ring.authenticate(need(scope, h.ServeHTTP)), nil
}

func (k keyring) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k.open() || public(r) {
			next.ServeHTTP(w, r)
			return
		}
		scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		secret = strings.TrimSpace(secret)
		if !strings.EqualFold(scheme, "Bearer") || secret == "" {
			unauthorized(w, "missing API key: send Authorization: Bearer <key>")
			return
		}
		p, ok := k[sha256.Sum256([]byte(secret))]
		if !ok {
			unauthorized(w, "unknown API key")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// public reports whether r needs no key: the health checks, the API's
// OpenAPI document, CORS preflights, and the console's static files (which
// hold no data; the console's calls to the API carry the key the person
// enters).
func public(r *http.Request) bool {
	p := r.URL.Path
	return p == "/healthz" || p == "/readyz" || p == "/v1/openapi.json" || r.Method == http.MethodOptions ||
		(r.Method == http.MethodGet && (p == "/" || strings.HasPrefix(p, "/console/")))
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="stepwise"`)
	writeError(w, apiErr(http.StatusUnauthorized, CodeUnauthorized, msg))
}

// need wraps a route's handler: the principal must hold scope, else 403.
func need(scope Scope, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p := principalOf(r); !p.may(scope) {
			writeError(w, apiErr(http.StatusForbidden, CodeForbidden,
				fmt.Sprintf("API key %q lacks the scope %s that %s needs", p.Name, scope, r.Pattern)))
			return
		}
		h(w, r)
	}
}
