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
