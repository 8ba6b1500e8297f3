package config_test

import (
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

func TestAuth_keys_and_gateway_limits_are_read(t *testing.T) {
	cfg, err := config.Parse([]byte(`
auth:
  keys:
    - {name: a, key_env: A_KEY, scopes: [runs:read]}
    - {name: b, key_sha256: "` + strings.Repeat("ab", 32) + `", scopes: [admin, runs:write], tenant: shop-1}
gateway: {cors_origins: ["https://console.example.com", "*"], allowed_hosts: [stepwise.lan, 10.0.0.5, "::1"], read_timeout: 5s, max_streams_per_key: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Auth.Enabled() || cfg.Auth.Keys[0].Tenant != "default" || cfg.Auth.Keys[1].Tenant != "shop-1" {
		t.Errorf("keys %+v", cfg.Auth.Keys)
	}
	g := cfg.Gateway
	if len(g.AllowedHosts) != 3 || g.ReadTimeout.Seconds() != 5 || g.MaxStreamsPerKey != 3 || g.WriteTimeout.Seconds() != 60 || g.MaxHeaderBytes != 64<<10 {
		t.Errorf("gateway %+v", g)
	}
	if def := config.Default(); def.Auth.Enabled() {
		t.Error("the default configuration has keys")
	}
}

func TestAuth_every_problem_of_the_keys_is_reported(t *testing.T) {
	_, err := config.Parse([]byte(`
auth:
  keys:
    - {key_env: A, scopes: [runs:read]}
    - {name: b, scopes: [runs:read]}
    - {name: b, key_env: B, key_sha256: "00", scopes: []}
    - {name: c, key_sha256: "xyz", scopes: [runs:delete], tenant: "no spaces"}
gateway: {cors_origins: ["console.example.com"], allowed_hosts: [stepwise.lan, "http://stepwise.lan", "stepwise.lan:8080"], read_timeout: -1s, max_streams_per_key: -2}
`))
	for _, want := range []string{
		"auth.keys[0].name: missing",
		"auth.keys[1]: give exactly one of key_env",
		"auth.keys[2].name: \"b\" names two keys",
		"auth.keys[2]: give exactly one of key_env",
		"auth.keys[2].scopes: missing",
		"auth.keys[3].key_sha256: want 64 hex digits",
		`auth.keys[3].scopes: unknown scope "runs:delete"`,
		`auth.keys[3].tenant: "no spaces"`,
		`gateway.cors_origins[0]: "console.example.com": want an origin`,
		`gateway.allowed_hosts[1]: "http://stepwise.lan": want a host name`,
		`gateway.allowed_hosts[2]: "stepwise.lan:8080": want a host name`,
		"gateway.read_timeout",
		"gateway.max_streams_per_key",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}
