package gateway_test

import (
	"crypto/sha256"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// searchHarness is a gateway whose store indexes runs by the metadata key
// order, with the keys "a" and "b" of their own tenants and "ops", an
// admin.
func searchHarness(t *testing.T) *harness {
	t.Helper()
	scopes := []gateway.Scope{gateway.ScopeRunsWrite, gateway.ScopeRunsRead}
	return newHarness(t, func(c *gateway.Config) {
		c.Store = store.New(testinfra.RedisClient(t), store.WithSearchableMetadata("order"))
		c.Keys = []gateway.Key{
			{Name: "a", SHA256: sha256.Sum256([]byte("secret-a")), Scopes: scopes, Tenant: "a"},
			{Name: "b", SHA256: sha256.Sum256([]byte("secret-b")), Scopes: scopes, Tenant: "b"},
			{Name: "ops", SHA256: sha256.Sum256([]byte("secret-ops")), Scopes: []gateway.Scope{gateway.ScopeAdmin}},
		}
	})
}

// listed is the run ids of one page of GET path by key.
func (h *harness) listed(t *testing.T, key, path string) []string {
	t.Helper()
	var page gateway.RunList
	h.by(key, http.MethodGet, path, nil).want(t, http.StatusOK, &page)
	var ids []string
	for _, r := range page.Runs {
		ids = append(ids, r.RunID)
	}
	slices.Sort(ids)
	return ids
}

// GET /v1/runs?meta.order=7 finds the runs created with that value, of the
// caller's tenant only; an admin may name a tenant, a tenant's key may not
// name another's.
func TestList_searches_a_declared_metadata_key_within_the_callers_tenant(t *testing.T) {
	h := searchHarness(t)
	for _, r := range []struct{ key, id, order string }{
		{"a", "a-7", `7`}, {"a", "a-8", `8`}, {"a", "a-7s", `"7"`}, {"b", "b-7", `7`},
	} {
		body := `{"run_id": "` + r.id + `", "agent": "assistant", "input": "hi", "start_at": "2099-01-01T00:00:00Z", "metadata": {"order": ` + r.order + `}}`
		h.by(r.key, http.MethodPost, "/v1/runs", body).want(t, http.StatusCreated, nil)
	}
	for _, c := range []struct {
		key, path string
		want      []string
	}{
		{"a", "/v1/runs?meta.order=7", []string{"a-7", "a-7s"}},
		{"b", "/v1/runs?meta.order=7", []string{"b-7"}},
		{"a", "/v1/runs?meta.order=8&tenant=a", []string{"a-8"}},
		{"ops", "/v1/runs?meta.order=7", []string{"a-7", "a-7s", "b-7"}},
		{"ops", "/v1/runs?meta.order=7&tenant=b", []string{"b-7"}},
		{"ops", "/v1/runs?meta.order=9", nil},
	} {
		if got := h.listed(t, c.key, c.path); !slices.Equal(got, c.want) {
			t.Errorf("%s by %s: %v, want %v", c.path, c.key, got, c.want)
		}
	}
	h.by("b", http.MethodGet, "/v1/runs?tenant=a", nil).wantError(t, http.StatusForbidden, "forbidden", "tenant b only")
	body := h.by("ops", http.MethodGet, "/v1/runs?meta.customer=acme&meta.order="+strings.Repeat("7", store.MaxSearchValue+1)+"&status=sleeping", nil).
		wantError(t, http.StatusBadRequest, "invalid_request", `metadata key "customer" is not searchable`, "meta.order", "status")
	if len(body.Error.Details) != 3 {
		t.Errorf("details = %q, want the three problems", body.Error.Details)
	}
}
