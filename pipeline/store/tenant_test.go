package store_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var tenantCases = []contractCase{
	{"a_run_keeps_its_tenant_and_one_stored_without_is_the_default_tenants", func(t *testing.T, f *fixture) {
		for _, c := range []struct{ id, tenant string }{{"t-a", "shop"}, {"t-none", ""}} {
			run := newRun(c.id)
			run.Tenant = c.tenant
			run.Trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
			got, _, err := f.st.CreateRun(f.ctx, run, input, t0)
			if err != nil {
				t.Fatal(err)
			}
			want := c.tenant
			if want == "" {
				want = pipeline.DefaultTenant
			}
			if got.Tenant != want {
				t.Errorf("%s: created with tenant %q", c.id, got.Tenant)
			}
			if tenant, trace, err := f.st.RunOwner(f.ctx, c.id); err != nil || tenant != want || trace != run.Trace || got.Trace != run.Trace {
				t.Errorf("RunOwner(%s) = %q, %q, %v; want %q and the run's trace context", c.id, tenant, trace, err, want)
			}
		}
		if _, _, err := f.st.RunOwner(f.ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("RunOwner of an unknown run: %v", err)
		}
	}},
	{"list_and_pending_filter_by_tenant", func(t *testing.T, f *fixture) {
		for i, c := range []struct{ id, tenant string }{{"a1", "a"}, {"b1", "b"}, {"a2", "a"}} {
			run := newRun(c.id)
			run.Tenant = c.tenant
			f.create(t, run, at(i))
		}
		if got, _ := f.list(t, store.ListFilter{Tenant: "a"}); !slices.Equal(got, []string{"a2", "a1"}) {
			t.Errorf("tenant a lists %v", got)
		}
		if got, _ := f.list(t, store.ListFilter{Tenant: "c"}); len(got) != 0 {
			t.Errorf("tenant c lists %v", got)
		}
		if got, _ := f.list(t, store.ListFilter{}); len(got) != 3 {
			t.Errorf("every tenant lists %v", got)
		}
		for _, tenant := range []string{"a", "b"} {
			calls, err := f.st.ListPending(f.ctx, store.PendingFilter{Tenant: tenant, RunID: "a1"})
			if err != nil || len(calls) != 0 {
				t.Errorf("pending of tenant %s: %v, %v", tenant, calls, err)
			}
		}
	}},
}
