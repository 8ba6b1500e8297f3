package store_test

import (
	"errors"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var admissionCases = []contractCase{
	{"admission_counts_every_live_run_and_the_tenant_and_batch_shares_and_a_retired_run_makes_room", func(t *testing.T, f *fixture) {
		admit := func(id, tenant, batch string) bool {
			t.Helper()
			r := newRun(id)
			r.Tenant, r.Batch = tenant, batch
			ok, err := f.st.AdmitRun(f.ctx, store.Admission{Run: r, At: t0, MaxActive: 3, TenantMax: 2, BatchMax: 1})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		f.created(t, "http") // created over HTTP: it counts, and was never refused
		if !admit("a1", "acme", "") || !admit("a1", "acme", "") {
			t.Fatal("a first run, and the same run again, are admitted")
		}
		if !admit("b1", "globex", "nightly") || admit("b2", "globex", "nightly") {
			t.Fatal("a batch holds at most 1")
		}
		if admit("a2", "acme", "") {
			t.Fatal("the deployment holds at most 3")
		}
		c, err := f.st.Count(f.ctx)
		if err != nil || c.Active != 3 {
			t.Fatalf("active %d, %v; want 3", c.Active, err)
		}
		// The HTTP run ends and is retired: there is room for one more.
		if _, err := f.st.FinishRun(f.ctx, "http", pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(1)); err != nil {
			t.Fatal(err)
		}
		if err := f.st.MarkPublished(f.ctx, f.run(t, "http"), at(2)); err != nil {
			t.Fatal(err)
		}
		if !admit("a2", "acme", "") || admit("a3", "acme", "") {
			t.Fatal("after a retirement, one more is admitted")
		}
	}},
	{"a_tenant_share_counts_runs_created_over_http_and_a_withdrawn_admission_makes_room", func(t *testing.T, f *fixture) {
		r := newRun("h1")
		r.Tenant = "acme"
		if _, _, err := f.st.CreateRun(f.ctx, r, input, t0); err != nil {
			t.Fatal(err)
		}
		a := newRun("k1")
		a.Tenant = "acme"
		limits := store.Admission{Run: a, At: t0, MaxActive: 10, TenantMax: 1, BatchMax: 10}
		if ok, err := f.st.AdmitRun(f.ctx, limits); ok || err != nil {
			t.Fatalf("acme holds its 1: %v, %v", ok, err)
		}
		if err := f.st.Withdraw(f.ctx, r); err != nil {
			t.Fatal(err)
		}
		if ok, err := f.st.AdmitRun(f.ctx, limits); !ok || err != nil {
			t.Fatalf("after the withdrawal: %v, %v", ok, err)
		}
	}},
	{"a_batch_fed_from_kafka_grows_by_its_runs_and_refuses_another_tenant", func(t *testing.T, f *fixture) {
		for _, id := range []string{"r1", "r2", "r1"} {
			if err := f.st.GrowBatch(f.ctx, "nightly", "acme", id, t0); err != nil {
				t.Fatal(err)
			}
		}
		b, err := f.st.GetBatch(f.ctx, "nightly")
		if err != nil || b.Tenant != "acme" || len(b.RunIDs) != 2 || b.RunIDs[0] != "r1" || b.RunIDs[1] != "r2" {
			t.Fatalf("batch %+v, %v", b, err)
		}
		if err := f.st.GrowBatch(f.ctx, "nightly", "globex", "r3", t0); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("another tenant's batch: %v, want ErrConflict", err)
		}
	}},
}
