package app

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// apiKeys turns auth.keys into the gateway's keys: a key_env is read from
// the environment (unset or empty is an error that names it), a key_sha256
// is taken as it is. Only the digests are kept.
func apiKeys(a config.Auth) ([]gateway.Key, error) {
	out := make([]gateway.Key, 0, len(a.Keys))
	for _, k := range a.Keys {
		key := gateway.Key{Name: k.Name, Tenant: k.Tenant}
		for _, s := range k.Scopes {
			key.Scopes = append(key.Scopes, gateway.Scope(s))
		}
		if k.KeyEnv != "" {
			secret := os.Getenv(k.KeyEnv)
			if secret == "" {
				return nil, fmt.Errorf("auth: key %q: environment variable %s is not set", k.Name, k.KeyEnv)
			}
			key.SHA256 = sha256.Sum256([]byte(secret))
		} else {
			b, err := hex.DecodeString(k.KeySHA256)
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("auth: key %q: key_sha256 is not 64 hex digits", k.Name)
			}
			copy(key.SHA256[:], b)
		}
		out = append(out, key)
	}
	return out, nil
}

// CheckExposure refuses a gateway without API keys that would listen on
// addr beyond loopback: anyone who reaches it could read every
// conversation and decide every parked call. s.Insecure (--insecure) says
// that is intended. RunGateway checks it; call it earlier to fail before
// announcing the address.
func (s *Stack) CheckExposure(addr net.Addr) error {
	if s.Config.Auth.Enabled() || s.Insecure {
		return nil
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("the gateway would listen on %s, beyond loopback, with no API key: anyone who reaches it could read and decide every run. "+
		"Configure auth.keys, listen on 127.0.0.1, or pass --insecure if that is what you want", addr)
}

// decisionSigner is the gateway's key for signing the decisions it
// publishes: that of decisions.gateway_producer, when it is a producer
// (config requires it with require_signature); nil otherwise.
func decisionSigner(d config.Decisions) (*gateway.Signer, error) {
	if _, ok := d.Producers[d.GatewayProducer]; !ok {
		return nil, nil
	}
	keys, err := d.Keys()
	if err != nil {
		return nil, err
	}
	return &gateway.Signer{Producer: d.GatewayProducer, Key: keys[d.GatewayProducer][0]}, nil
}
