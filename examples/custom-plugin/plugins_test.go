package customplugin_test

import (
	"strings"
	"testing"

	customplugin "github.com/stepwise-run/stepwise/examples/custom-plugin"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

func TestRegistry_builds_the_plugins_of_the_example_configuration(t *testing.T) {
	cfg, err := config.Load("stepwise.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := customplugin.Registry().ForAgents(cfg); err != nil {
		t.Fatal(err)
	}
}

func TestRegistry_stock_workers_refuse_the_example_configuration(t *testing.T) {
	cfg, err := config.Load("stepwise.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = builtin.Registry().ForAgents(cfg)
	if err == nil || !strings.Contains(err.Error(), `plugin "audit" is not in this build`) {
		t.Fatalf("error %v, want audit missing from the built-ins", err)
	}
}
