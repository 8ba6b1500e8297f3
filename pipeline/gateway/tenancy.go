package gateway

import (
	"fmt"
	"net/http"

	"github.com/stepwise-run/stepwise/pipeline/store"
)

// visible reports whether r's principal may see a run of tenant; when not,
// it answers exactly as for a run that does not exist, so a key cannot
// learn which run ids another tenant uses.
func (s *Server) visible(w http.ResponseWriter, r *http.Request, runID, tenant string) bool {
	if principalOf(r).owns(tenant) {
		return true
	}
	s.fail(w, r, "run "+runID, fmt.Errorf("%w: run %s", store.ErrNotFound, runID))
	return false
}

// ownedRun checks that run runID exists and that r's principal may see it,
// with one read of the run's tenant (and trace context, returned);
// otherwise it answers 404 (or what the store's error calls for) and
// returns false.
func (s *Server) ownedRun(w http.ResponseWriter, r *http.Request, runID string) (trace string, ok bool) {
	tenant, trace, err := s.cfg.Store.RunOwner(r.Context(), runID)
	if err != nil {
		s.fail(w, r, "run "+runID, err)
		return "", false
	}
	return trace, s.visible(w, r, runID, tenant)
}

// tenantFilter is the tenant a listing is limited to: the principal's, or
// "" (every tenant) for an admin.
func tenantFilter(r *http.Request) string {
	if p := principalOf(r); !p.seesAll() {
		return p.Tenant
	}
	return ""
}

// decidedBy is who an HTTP decision or cancel is recorded as decided by:
// the API key's name, with what the body says after it as a note; with no
// keys configured, what the body says.
func decidedBy(r *http.Request, body string) string {
	p := principalOf(r)
	switch {
	case p.Name == "":
		return body
	case body == "" || body == p.Name:
		return p.Name
	default:
		return p.Name + " (" + body + ")"
	}
}
