package stepworker

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
)

func TestModels_a_runs_script_is_parsed_once_and_kept_within_bounds(t *testing.T) {
	m, err := newModels(&config.Config{})
	if err != nil {
		t.Fatal(err)
	}
	run := pipeline.Run{Model: json.RawMessage(`{"provider":"script","turns":[{"text":"hi"}]}`)}
	first, err := m.forRun(run)
	if err != nil {
		t.Fatal(err)
	}
	again, err := m.forRun(pipeline.Run{Model: append(json.RawMessage(nil), run.Model...)})
	if err != nil || again != first {
		t.Fatalf("the same script parsed again: %p, %p (%v)", again, first, err)
	}
	bad := pipeline.Run{Model: json.RawMessage(`{"provider":"script","turns":[{"delay_ms":-1}]}`)}
	for range 2 {
		if _, err := m.forRun(bad); err == nil {
			t.Fatal("an invalid script was taken")
		}
	}
	pad := strings.Repeat("x", maxScriptBytes/4)
	for range 2 {
		for i := range 5 { // five of a quarter of the budget each: the set is emptied on the way
			run := pipeline.Run{Model: json.RawMessage(fmt.Sprintf(`{"provider":"script","turns":[{"text":"%d%s"}]}`, i, pad))}
			if _, err := m.forRun(run); err != nil {
				t.Fatal(err)
			}
			if m.scriptBytes > maxScriptBytes {
				t.Fatalf("%d scripts of %d bytes kept, more than %d bytes", len(m.scripts), m.scriptBytes, maxScriptBytes)
			}
		}
	}
}

func TestModels_a_runs_script_past_the_cap_is_refused_at_its_step(t *testing.T) {
	m, err := newModels(&config.Config{Runs: config.Runs{MaxScriptDelay: config.D(time.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	run := pipeline.Run{Model: json.RawMessage(`{"provider":"script","turns":[{"text":"zzz","delay_ms":1001}]}`)}
	if _, err := m.forRun(run); err == nil || !strings.Contains(err.Error(), "runs.max_script_delay") {
		t.Fatalf("got %v, want the cap named", err)
	}
}
