package config

import (
	"fmt"
	"os"
)

// DefaultGatewayProducer is the producer name the gateway signs the
// decisions it publishes with.
const DefaultGatewayProducer = "gateway"

// Decisions holds how decisions from Kafka are checked (yaml key
// "decisions").
type Decisions struct {
	// RequireSignature makes the step workers reject every decision that
	// does not carry a valid HMAC-SHA256 signature of a known producer
	// (topics.VerifySignature), with the outcome rejected, reason
	// "signature". Default false.
	RequireSignature bool `json:"require_signature,omitempty"`
	// Producers are who may sign decisions, by the name a decision gives in
	// its producer field, each with its key in the environment.
	Producers map[string]Producer `json:"producers,omitempty"`
	// GatewayProducer is the producer whose key the gateway signs HTTP
	// decisions with, when it has one; default "gateway". With
	// require_signature it must have one.
	GatewayProducer string `json:"gateway_producer,omitempty"`
}

// Producer is one signer of decisions and run requests. Its key is read
// from the environment variable KeyEnv; PreviousKeyEnv, when set, names a
// second key also accepted, for rotating keys without a pause. Tenant,
// when set (same rules as auth.keys[].tenant), binds the producer to one
// tenant: the runs it requests are that tenant's, and its verified
// decisions apply only to that tenant's runs; unset, it acts for every
// tenant and its run requests are the default tenant's.
type Producer struct {
	KeyEnv         string `json:"key_env"`
	PreviousKeyEnv string `json:"previous_key_env,omitempty"`
	Tenant         string `json:"tenant,omitempty"`
}

func (d *Decisions) setDefaults() {
	if d.GatewayProducer == "" {
		d.GatewayProducer = DefaultGatewayProducer
	}
}

func (d Decisions) check(ps *problems, path string) {
	if d.RequireSignature && len(d.Producers) == 0 {
		ps.add(field(path, "producers"), "require_signature is on but no producer may sign: name one or more, each with its key_env")
	}
	if d.RequireSignature {
		if _, ok := d.Producers[d.GatewayProducer]; !ok {
			ps.add(field(path, "producers"), fmt.Sprintf("require_signature is on but the gateway's producer %q is not one: add it, so HTTP decisions can be signed", d.GatewayProducer))
		}
	}
	for _, name := range sortedKeys(d.Producers) {
		at := field(field(path, "producers"), name)
		if d.Producers[name].KeyEnv == "" {
			ps.add(at+".key_env", "missing: the environment variable that holds the producer's key")
		}
		checkTenant(ps, at, d.Producers[name].Tenant)
	}
}

// Keys reads every producer's keys from the environment: producer name →
// its key, then its previous key when set. An unset or empty variable is
// an error that names it.
func (d Decisions) Keys() (map[string][][]byte, error) {
	out := map[string][][]byte{}
	for _, name := range sortedKeys(d.Producers) {
		p := d.Producers[name]
		for i, env := range []string{p.KeyEnv, p.PreviousKeyEnv} {
			if env == "" && i == 1 {
				continue
			}
			v := os.Getenv(env)
			if v == "" {
				return nil, fmt.Errorf("decisions.producers.%s: environment variable %s is not set", name, env)
			}
			out[name] = append(out[name], []byte(v))
		}
	}
	return out, nil
}

// Tenants maps each producer bound to a tenant to that tenant.
func (d Decisions) Tenants() map[string]string {
	out := map[string]string{}
	for name, p := range d.Producers {
		if p.Tenant != "" {
			out[name] = p.Tenant
		}
	}
	return out
}
