package providers_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/model/openai"
	"github.com/stepwise-run/stepwise/pipeline/model/providers"
	"github.com/stepwise-run/stepwise/pipeline/model/script"
	"github.com/stepwise-run/stepwise/pipeline/model/synthetic"
)

func modelOf(t *testing.T, obj string) config.Model {
	t.Helper()
	var m config.Model
	if err := json.Unmarshal([]byte(obj), &m); err != nil {
		t.Fatalf("%s: %v", obj, err)
	}
	return m
}

func TestNew_chooses_the_provider_the_config_names(t *testing.T) {
	t.Setenv("STEPWISE_TEST_PROVIDERS_KEY", "sk-test")
	for _, tc := range []struct {
		obj  string
		want func(model.Model) bool
	}{
		{`{"provider":"script","turns":[{"text":"hi"}]}`, func(m model.Model) bool { _, ok := m.(*script.Model); return ok }},
		{`{"provider":"openai","name":"gpt-4o-mini","base_url":"http://127.0.0.1:1/v1","api_key_env":"STEPWISE_TEST_PROVIDERS_KEY"}`,
			func(m model.Model) bool { _, ok := m.(*openai.Model); return ok }},
		{`{"provider":"synthetic","steps":2}`, func(m model.Model) bool { _, ok := m.(*synthetic.Model); return ok }},
	} {
		m, err := providers.New(modelOf(t, tc.obj))
		if err != nil {
			t.Errorf("New(%s): %v", tc.obj, err)
			continue
		}
		if !tc.want(m) {
			t.Errorf("New(%s) = %T", tc.obj, m)
		}
	}
}

func TestNew_reads_each_providers_own_settings(t *testing.T) {
	m, err := providers.New(modelOf(t, `{"provider":"script","turns":[{"text":"scripted"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := m.Infer(context.Background(), model.Request{Step: 0}); err != nil || resp.Text != "scripted" {
		t.Errorf("script answered %q, %v", resp.Text, err)
	}
	m, err = providers.New(modelOf(t, `{"provider":"synthetic","tool":"sleep","tool_calls_per_step":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := m.Infer(context.Background(), model.Request{RunID: "r", Step: 0}); err != nil || len(resp.ToolCalls) != 3 || resp.ToolCalls[0].Name != "sleep" {
		t.Errorf("synthetic answered %+v, %v", resp, err)
	}
}

func TestNew_accepts_a_config_built_in_code(t *testing.T) {
	for _, p := range []string{config.ProviderScript, config.ProviderSynthetic} {
		if _, err := providers.New(config.Model{Provider: p}); err != nil {
			t.Errorf("New(%s without Raw): %v", p, err)
		}
	}
}

func TestNew_refuses_an_unknown_or_missing_provider(t *testing.T) {
	for _, obj := range []string{`{"provider":"claude"}`, `{"name":"x"}`} {
		_, err := providers.New(modelOf(t, obj))
		if err == nil || !strings.Contains(err.Error(), "openai, script, synthetic") {
			t.Errorf("New(%s) err = %v; want a refusal naming the known providers", obj, err)
		}
	}
}

func TestNew_passes_on_the_providers_errors(t *testing.T) {
	_, err := providers.New(modelOf(t, `{"provider":"openai","name":"m","api_key_env":"STEPWISE_TEST_SURELY_UNSET_42"}`))
	if !errors.Is(err, openai.ErrMissingAPIKey) {
		t.Errorf("openai without a key: err = %v", err)
	}
	if _, err := providers.New(modelOf(t, `{"provider":"synthetic","steps":-1}`)); err == nil {
		t.Error("synthetic with steps -1 accepted")
	}
	if _, err := providers.New(modelOf(t, `{"provider":"script","turns":[{"tool_calls":[{}]}]}`)); err == nil {
		t.Error("script with a nameless call accepted")
	}
}

func TestNew_returns_a_nil_model_with_an_error(t *testing.T) {
	for _, obj := range []string{`{"provider":"script","turns":[{"tool_calls":[{}]}]}`, `{"provider":"synthetic","steps":-1}`,
		`{"provider":"openai","name":"m","api_key_env":"STEPWISE_TEST_SURELY_UNSET_42"}`} {
		if m, err := providers.New(modelOf(t, obj)); err == nil || m != nil {
			t.Errorf("New(%s) = %#v, %v; want nil and an error", obj, m, err)
		}
	}
}
