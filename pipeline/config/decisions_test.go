package config_test

import (
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

func TestDecisions_signing_keys_come_from_the_environment(t *testing.T) {
	t.Setenv("ERP_KEY", "k1")
	t.Setenv("ERP_OLD", "k0")
	t.Setenv("GW_KEY", "g1")
	cfg, err := config.Parse([]byte(`
decisions:
  require_signature: true
  producers:
    erp: {key_env: ERP_KEY, previous_key_env: ERP_OLD}
    gateway: {key_env: GW_KEY}
`))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := cfg.Decisions.Keys()
	if err != nil || string(keys["erp"][0]) != "k1" || string(keys["erp"][1]) != "k0" || string(keys["gateway"][0]) != "g1" {
		t.Fatalf("keys %q, %v", keys, err)
	}
	t.Setenv("GW_KEY", "")
	if _, err := cfg.Decisions.Keys(); err == nil || !strings.Contains(err.Error(), "GW_KEY is not set") {
		t.Fatalf("an unset key: %v", err)
	}
}

func TestDecisions_require_signature_needs_producers_and_the_gateways(t *testing.T) {
	for yaml, want := range map[string]string{
		"decisions: {require_signature: true}":                                 "no producer may sign",
		"decisions: {require_signature: true, producers: {erp: {key_env: E}}}": `the gateway's producer "gateway" is not one`,
		"decisions: {producers: {erp: {}}}":                                    "decisions.producers.erp.key_env: missing",
	} {
		if _, err := config.Parse([]byte(yaml)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", yaml, err, want)
		}
	}
}

func TestRunRequests_default_to_ten_thousand_active_runs_with_no_share_bound(t *testing.T) {
	cfg, err := config.Parse([]byte(`agents: {a: {model: {provider: script, turns: [{text: hi}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.RunRequests
	if r.MaxActive != 10000 || r.TenantMax() != 10000 || r.BatchMax() != 10000 {
		t.Fatalf("run_requests = %+v", r)
	}
}

func TestRunRequests_shares_and_producer_tenants_are_checked(t *testing.T) {
	_, err := config.Parse([]byte(`
run_requests: {max_active: -1, tenant_share: 1.5, batch_share: -0.1}
decisions: {producers: {erp: {key_env: K, tenant: "bad tenant"}}}
agents: {a: {model: {provider: script, turns: [{text: hi}]}}}`))
	for _, want := range []string{"run_requests.max_active: -1 is negative", "run_requests.tenant_share: 1.5", "run_requests.batch_share: -0.1",
		`decisions.producers.erp.tenant: "bad tenant"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	cfg, err := config.Parse([]byte(`
run_requests: {max_active: 10, tenant_share: 0.25}
decisions: {producers: {erp: {key_env: K, tenant: acme}, ops: {key_env: L}}}
agents: {a: {model: {provider: script, turns: [{text: hi}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RunRequests.TenantMax() != 2 || cfg.RunRequests.BatchMax() != 10 {
		t.Fatalf("maxima %d %d", cfg.RunRequests.TenantMax(), cfg.RunRequests.BatchMax())
	}
	if got := cfg.Decisions.Tenants(); len(got) != 1 || got["erp"] != "acme" {
		t.Fatalf("tenants = %v", got)
	}
}
