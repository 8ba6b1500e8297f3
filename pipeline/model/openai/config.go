package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

// Provider is the provider name of OpenAI-compatible models.
const Provider = config.ProviderOpenAI

// Defaults of the optional settings.
const (
	DefaultTimeout    = 60 * time.Second // per attempt; for a stream, the whole stream
	DefaultMaxRetries = 3                // retries after the first attempt
)

// settings are what New reads from a config.Model: the shared fields from
// the struct, the provider's own from Raw.
type settings struct {
	name        string
	baseURL     string
	keyEnv      string
	temperature *float64
	maxTokens   *int64
	timeout     time.Duration
	maxRetries  int
	stream      bool
	batch       *BatchSettings // nil: no batch mode (batch.go)
}

// sharedFields are read by package config into config.Model's fields.
var sharedFields = []string{"provider", "name", "base_url", "api_key_env"}

// ownFields are this provider's settings, read from Raw.
var ownFields = []string{"temperature", "max_tokens", "timeout", "max_retries", "stream", "batch"}

// readSettings reads and checks cfg, reporting every problem at once.
func readSettings(cfg config.Model) (settings, error) {
	s := settings{
		name: cfg.Name, baseURL: cfg.BaseURL, keyEnv: cfg.APIKeyEnv,
		timeout: DefaultTimeout, maxRetries: DefaultMaxRetries, stream: true,
	}
	var ps []error
	bad := func(field, format string, args ...any) {
		ps = append(ps, &configError{field: field, problem: fmt.Sprintf(format, args...)})
	}
	if cfg.Provider != Provider {
		bad("provider", "is %q, want %q", cfg.Provider, Provider)
	}
	if s.name == "" {
		bad("name", "required: the model name the endpoint knows, e.g. gpt-4o-mini")
	}
	if s.keyEnv == "" {
		bad("api_key_env", "required: the name of the environment variable that holds the API key")
	}
	if s.baseURL != "" {
		if u, err := url.Parse(s.baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("base_url", "want an http or https URL, got %q", s.baseURL)
		}
	}

	fields, err := objectFields(cfg.Raw)
	if err != nil {
		bad("", "%v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) { // problems in a stable order
		v := fields[k]
		if bytes.Equal(v, []byte("null")) {
			continue // as if absent
		}
		switch k {
		case "temperature":
			var f float64
			if json.Unmarshal(v, &f) != nil {
				bad(k, "want a number, got %s", describe(v))
			} else if f < 0 {
				bad(k, "must not be negative, got %v", f)
			} else {
				s.temperature = &f
			}
		case "max_tokens":
			var n int64
			if json.Unmarshal(v, &n) != nil {
				bad(k, "want a whole number, got %s", describe(v))
			} else if n <= 0 {
				bad(k, "must be positive, got %d", n)
			} else {
				s.maxTokens = &n
			}
		case "timeout":
			positiveDuration(k, v, &s.timeout, bad)
		case "max_retries":
			var n int
			if json.Unmarshal(v, &n) != nil {
				bad(k, "want a whole number, got %s", describe(v))
			} else if n < 0 {
				bad(k, "must not be negative, got %d", n)
			} else {
				s.maxRetries = n
			}
		case "stream":
			if json.Unmarshal(v, &s.stream) != nil {
				bad(k, "want true or false, got %s", describe(v))
			}
		case "batch":
			s.batch = readBatch(v, bad)
		default:
			if !slices.Contains(sharedFields, k) {
				bad(k, "unknown setting for provider %q; known: %s", Provider, strings.Join(append(slices.Clone(sharedFields), ownFields...), ", "))
			}
		}
	}
	return s, errors.Join(ps...)
}

// positiveDuration reads the setting k, raw, a duration > 0, into into,
// reporting a problem to bad.
func positiveDuration(k string, raw json.RawMessage, into *time.Duration, bad func(field, format string, args ...any)) {
	var d config.Duration
	if err := json.Unmarshal(raw, &d); err != nil {
		bad(k, "%v", err)
	} else if d.Duration <= 0 {
		bad(k, "must be positive, got %s", d.Duration)
	} else {
		*into = d.Duration
	}
}

// configError is one problem of a model's configuration.
type configError struct{ field, problem string }

func (e *configError) Error() string {
	if e.field == "" {
		return "model: " + e.problem
	}
	return "model." + e.field + ": " + e.problem
}

// Is makes errors.Is(err, ErrInvalidConfig) hold.
func (e *configError) Is(target error) bool { return target == ErrInvalidConfig }

// objectFields splits a JSON object into its fields. Empty raw is an empty
// object (a config.Model built in code rather than read from a file).
func objectFields(raw json.RawMessage) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return nil, fmt.Errorf("want a JSON object, got %s", describe(raw))
	}
	return fields, nil
}

// describe shows a JSON value in an error message, cut to a readable size.
func describe(v []byte) string {
	const limit = 60
	if len(v) > limit {
		return string(v[:limit]) + "…"
	}
	return string(v)
}
