package config_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"sigs.k8s.io/yaml"
)

func TestDefault_is_valid_and_runs_a_script_that_calls_echo(t *testing.T) {
	cfg := config.Default()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, ok := cfg.Agent("assistant")
	if !ok || a.Model.Provider != config.ProviderScript {
		t.Fatalf("assistant = %+v, %v", a, ok)
	}
	var script struct {
		Turns []struct {
			ToolCalls []struct{ Name string } `json:"tool_calls"`
		} `json:"turns"`
	}
	if err := json.Unmarshal(a.Model.Raw, &script); err != nil {
		t.Fatal(err)
	}
	var called []string
	for _, turn := range script.Turns {
		for _, c := range turn.ToolCalls {
			called = append(called, c.Name)
		}
	}
	if len(script.Turns) < 2 || !slices.Contains(called, "echo") {
		t.Errorf("script turns %d, calls %q; want several turns calling echo", len(script.Turns), called)
	}
	for _, name := range []string{"echo", "sleep", "fail"} {
		if _, ok := cfg.Tool(name); !ok || !slices.Contains(a.Tools, name) {
			t.Errorf("tool %s missing or not listed", name)
		}
	}
}

func TestDefault_returns_a_fresh_copy(t *testing.T) {
	a := config.Default()
	delete(a.Agents, "assistant")
	if _, ok := config.Default().Agent("assistant"); !ok {
		t.Error("changing one Default() changed the next")
	}
	y := config.DefaultYAML()
	y[0] = 'X'
	if config.DefaultYAML()[0] == 'X' {
		t.Error("DefaultYAML shares its bytes")
	}
}

// The example configuration of deploy/ is used by compose and, inside the
// ConfigMap, by the Kubernetes manifests: both must parse.
func TestDeploy_configs_are_valid(t *testing.T) {
	compose := readFile(t, "../../deploy/stepwise.yaml")
	cfg, err := config.Parse(compose)
	if err != nil {
		t.Fatalf("deploy/stepwise.yaml: %v", err)
	}
	var cm struct {
		Kind string            `json:"kind"`
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(readFile(t, "../../deploy/k8s/configmap.yaml"), &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Kind != "ConfigMap" || cm.Data["stepwise.yaml"] == "" {
		t.Fatalf("configmap: kind %q, keys %v", cm.Kind, cm.Data)
	}
	if cm.Data["stepwise.yaml"] != string(compose) {
		t.Error("deploy/k8s/configmap.yaml does not hold deploy/stepwise.yaml verbatim; copy it over")
	}
	if got, want := cfg.Queues(), []string{"default", "payments"}; !slices.Equal(got, want) {
		t.Errorf("deploy queues = %q, want %q (the toolworker Deployments in deploy/k8s/toolworker.yaml)", got, want)
	}
}
