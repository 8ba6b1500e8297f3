package builtin_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

func TestRegistry_holds_the_five_built_in_plugins(t *testing.T) {
	want := []string{builtin.Compaction, builtin.DeferredTools, builtin.LoopWarning, builtin.Reminder, builtin.ResultGuard}
	if got := builtin.Registry().Names(); !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
}

func TestRegistry_builds_every_built_in_together(t *testing.T) {
	_, err := builtin.Registry().Build(map[string]json.RawMessage{
		builtin.Reminder:      json.RawMessage(`{"message": "hi"}`),
		builtin.DeferredTools: json.RawMessage(`{"defer": ["x"]}`),
		builtin.ResultGuard:   nil,
		builtin.LoopWarning:   json.RawMessage(`null`),
		builtin.Compaction:    json.RawMessage(`{"budget_tokens": 8000}`),
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRegistry_is_a_fresh_base_for_custom_plugins(t *testing.T) {
	a := builtin.Registry()
	a.Add("audit", func(json.RawMessage) (plugin.Plugin, error) { return nil, nil })
	if slices.Contains(builtin.Registry().Names(), "audit") {
		t.Fatal("adding to one registry changed the next one")
	}
}

func TestRegistry_a_plugin_not_in_the_build_is_an_error(t *testing.T) {
	_, err := builtin.Registry().Build(map[string]json.RawMessage{"audit": nil})
	if err == nil || !strings.Contains(err.Error(), `"audit" is not in this build`) {
		t.Fatalf("error %v", err)
	}
}

func TestRegistry_a_plugin_without_its_required_settings_is_an_error(t *testing.T) {
	_, err := builtin.Registry().Build(map[string]json.RawMessage{builtin.Reminder: nil})
	if err == nil || !strings.Contains(err.Error(), "plugin reminder: invalid settings: message: required") {
		t.Fatalf("error %v", err)
	}
}
