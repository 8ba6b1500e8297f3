package config_test

import (
	"os"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

// FuzzParse: whatever the bytes, Parse never panics; a configuration it
// accepts validates and has every default filled in.
func FuzzParse(f *testing.F) {
	design, err := os.ReadFile("testdata/design.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{string(design), "", "agents: {}", "agents: {a: {model: {provider: script}}}",
		"stepworker: {lease: -1s}", "tools: {t: {executor: {builtin: echo}, ask_when: 'args.x >'}}", "[1, 2]",
		"tools: {t: {executor: {builtin: echo}, parameters: {y: &a [on, 2024-01-01, .inf], 1: *a, <<: {n: ~}}}}"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(data)
		if err != nil {
			return
		}
		if cfg.StepWorker.Lease.Duration <= 0 || cfg.ToolWorker.Lease.Duration <= 0 || cfg.StepWorker.MaxAttempts <= 0 {
			t.Fatalf("accepted a configuration without its defaults: %+v %+v", cfg.StepWorker, cfg.ToolWorker)
		}
	})
}
