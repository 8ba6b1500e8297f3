package config

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/stepwise-run/stepwise/pipeline"
)

// The scopes an API key may hold.
const (
	ScopeRunsWrite      = "runs:write"      // create and cancel runs
	ScopeRunsRead       = "runs:read"       // list and read runs, their messages, events and pending calls
	ScopeDecisionsWrite = "decisions:write" // decide parked calls
	ScopeAdmin          = "admin"           // every scope, on every tenant's runs
)

// Scopes lists every scope, in the order the documentation gives them.
var Scopes = []string{ScopeRunsWrite, ScopeRunsRead, ScopeDecisionsWrite, ScopeAdmin}

var tenantPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Auth holds the gateway's API keys (yaml key "auth"). With no key the
// gateway is open, and refuses to listen beyond loopback unless told
// --insecure.
type Auth struct {
	Keys []APIKey `json:"keys,omitempty"`
}

// APIKey is one key a client sends as "Authorization: Bearer <key>". The
// key itself is never in the file: KeyEnv names the environment variable
// that holds it, or KeySHA256 is the hex SHA-256 of it.
type APIKey struct {
	// Name is the key's principal: what the gateway logs and writes as
	// decided_by of the decisions it takes with this key. Unique.
	Name      string   `json:"name"`
	KeyEnv    string   `json:"key_env,omitempty"`
	KeySHA256 string   `json:"key_sha256,omitempty"`
	Scopes    []string `json:"scopes"`
	// Tenant is whose runs the key sees and acts on; default "default".
	// A key with the admin scope acts on every tenant's runs.
	Tenant string `json:"tenant,omitempty"`
}

// Enabled reports whether any key is configured: then every route but the
// health checks needs one.
func (a Auth) Enabled() bool { return len(a.Keys) > 0 }

func (a *Auth) setDefaults() {
	for i := range a.Keys {
		if a.Keys[i].Tenant == "" {
			a.Keys[i].Tenant = pipeline.DefaultTenant
		}
	}
}

func (a Auth) check(ps *problems, path string) {
	names := map[string]bool{}
	for i, k := range a.Keys {
		at := fmt.Sprintf("%s.keys[%d]", path, i)
		switch {
		case k.Name == "":
			ps.add(field(at, "name"), "missing: name the key (it is the principal of what it does)")
		case names[k.Name]:
			ps.add(field(at, "name"), fmt.Sprintf("%q names two keys", k.Name))
		}
		names[k.Name] = true
		switch {
		case (k.KeyEnv == "") == (k.KeySHA256 == ""):
			ps.add(at, "give exactly one of key_env (an environment variable holding the key) and key_sha256 (its hex SHA-256)")
		case k.KeySHA256 != "":
			if b, err := hex.DecodeString(k.KeySHA256); err != nil || len(b) != 32 {
				ps.add(field(at, "key_sha256"), "want 64 hex digits, the SHA-256 of the key (printf %s KEY | sha256sum)")
			}
		}
		if len(k.Scopes) == 0 {
			ps.add(field(at, "scopes"), "missing: one or more of "+strings.Join(Scopes, ", "))
		}
		for _, s := range k.Scopes {
			if !slices.Contains(Scopes, s) {
				ps.add(field(at, "scopes"), fmt.Sprintf("unknown scope %q (known: %s)", s, strings.Join(Scopes, ", ")))
			}
		}
		checkTenant(ps, at, k.Tenant)
	}
}

// checkTenant checks the tenant a key or a producer at path is bound to
// ("" for none).
func checkTenant(ps *problems, path, tenant string) {
	if tenant != "" && !tenantPattern.MatchString(tenant) {
		ps.add(field(path, "tenant"), fmt.Sprintf("%q: want 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", tenant))
	}
}
