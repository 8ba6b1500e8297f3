package builtin_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

// build registers one built-in plugin with settings (a JSON text; "" for
// none) and fails the test if that is refused.
func build(t *testing.T, name, settings string) *plugin.Set {
	t.Helper()
	var raw json.RawMessage
	if settings != "" {
		raw = json.RawMessage(settings)
	}
	set, err := builtin.Registry().Build(map[string]json.RawMessage{name: raw})
	if err != nil {
		t.Fatalf("build %s: %v", name, err)
	}
	return set
}

// run runs pc's phase and fails the test on a phase error or a failed
// action; it returns the actions left for other phases.
func run(t *testing.T, set *plugin.Set, pc *plugin.Context, pending ...plugin.Action) []plugin.Action {
	t.Helper()
	later, err := set.Run(context.Background(), pc, pending)
	if err != nil {
		t.Fatalf("run %s: %v", pc.Phase, err)
	}
	if len(pc.Failed) > 0 {
		t.Fatalf("run %s: failed actions %+v", pc.Phase, pc.Failed)
	}
	return later
}

// checkpoint is what a worker keeps of a phase's state for the next step:
// the persistent keys only.
func checkpoint(set *plugin.Set, s plugin.State) plugin.State {
	out := plugin.State{}
	for k, v := range s {
		if set.Persistent(k) {
			out[k] = v
		}
	}
	return out
}

// get reads a key from state, failing the test on a decoding error.
func get[T any](t *testing.T, s plugin.State, k plugin.Key[T]) (T, bool) {
	t.Helper()
	v, ok, err := k.Get(s)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

// contextMessages are the messages actions added to the request.
func contextMessages(req *plugin.Request, before int) []pipeline.Message {
	return req.Messages[before:]
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
