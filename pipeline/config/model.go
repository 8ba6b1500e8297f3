package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Model providers.
const (
	ProviderOpenAI    = "openai"    // any OpenAI-compatible endpoint
	ProviderScript    = "script"    // deterministic turns, for demos and tests
	ProviderSynthetic = "synthetic" // configurable latency and tool calls, for benchmarks
)

// Providers lists the model providers stepwise knows.
func Providers() []string { return []string{ProviderOpenAI, ProviderScript, ProviderSynthetic} }

// Model says which model an agent asks. The fields every provider shares are
// read into Provider, Name, BaseURL and APIKeyEnv; Raw keeps the whole object
// as written, so a provider's own settings (the script provider's "turns" and
// "loop_last", the synthetic provider's latency and calls) are read from Raw by
// that provider's package. Extra fields are therefore not errors here.
type Model struct {
	Provider  string `json:"provider"`              // openai | script | synthetic
	Name      string `json:"name,omitempty"`        // the model name; required for openai
	BaseURL   string `json:"base_url,omitempty"`    // openai: the endpoint; empty means the SDK's default
	APIKeyEnv string `json:"api_key_env,omitempty"` // openai: the environment variable holding the key

	// Raw is the model object exactly as written (as JSON). Changing the
	// fields above does not change it.
	Raw json.RawMessage `json:"-"`
}

// modelFields is Model without its methods, to decode the known fields.
type modelFields Model

// UnmarshalJSON keeps the whole object in Raw and reads the known fields,
// ignoring the provider-specific ones.
func (m *Model) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("model: want a mapping, got %s", describe(b))
	}
	var f modelFields
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	f.Raw = append(json.RawMessage(nil), b...)
	*m = Model(f)
	return nil
}

// MarshalJSON writes Raw when it is set, the known fields otherwise.
func (m Model) MarshalJSON() ([]byte, error) {
	if len(m.Raw) > 0 {
		return m.Raw, nil
	}
	return json.Marshal(modelFields(m))
}

// Key names the model for limits (limits.models): "<provider>:<name>", or
// the provider alone for a model without a name.
func (m Model) Key() string {
	if m.Name == "" {
		return m.Provider
	}
	return m.Provider + ":" + m.Name
}

// Validate reports every problem of the model at once, with paths under
// "model". The gateway uses it for a model a run brings along.
func (m Model) Validate() error {
	var ps problems
	m.check(&ps, "model")
	return ps.err()
}

func (m Model) check(ps *problems, path string) {
	switch m.Provider {
	case ProviderOpenAI:
		if m.Name == "" {
			ps.add(field(path, "name"), `required for provider "openai"`)
		}
	case ProviderScript, ProviderSynthetic:
	case "":
		ps.add(field(path, "provider"), "missing; want one of "+strings.Join(Providers(), ", "))
	default:
		ps.add(field(path, "provider"), fmt.Sprintf("unknown provider %q; want one of %s", m.Provider, strings.Join(Providers(), ", ")))
	}
}
