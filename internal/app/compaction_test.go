package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

// requests is a test plugin that records, at each BeforeInference, the
// request the model is about to get. Its action runs after compaction's:
// plugins register in name order ("compaction" < "requests"), so the
// hooks schedule the two actions in that order, into the same round.
type requests struct {
	mu   sync.Mutex
	seen []plugin.Request
}

func (r *requests) Register(reg *plugin.Registrar) error {
	reg.Hook(pipeline.PhaseBeforeInference, func(context.Context, *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		return cmd, cmd.Schedule("requests.record", nil)
	})
	return reg.Action("requests.record", pipeline.PhaseBeforeInference, func(_ context.Context, pc *plugin.Context, _ json.RawMessage) (plugin.Command, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.seen = append(r.seen, *pc.Request)
		return plugin.Command{}, nil
	})
}

func (r *requests) all() []plugin.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]plugin.Request(nil), r.seen...)
}

// A 300-step script run with compaction on: every request the model gets
// is within the budget, a long tool result is read back with
// fetch_result, the compactions show in the run's events and state, and
// the run's answer is the script's.
func TestCompaction_a_300_step_run_stays_within_its_budget_and_answers_right(t *testing.T) {
	const steps, budget = 300, 3000
	seen := &requests{}
	reg := builtin.Registry()
	reg.Add("requests", func(json.RawMessage) (plugin.Plugin, error) { return seen, nil })
	stack, base := pluginStackOf(t, reg, fmt.Sprintf(`
agents:
  long:
    model: {provider: script, turns: [{text: unused}]}
    system: "You add up the numbers the echo tool gives back."
    tools: [echo]
    plugins:
      compaction:
        budget_tokens: %d
        keep_last: 6
        tool_result_max_bytes: 1000
        model: {provider: script, loop_last: true, turns: [{text: "Summary: the user wants the total of the numbers n the echo calls return; keep adding."}]}
      requests: null
`, budget), nil)

	// Step i echoes n = i; step 100's result is long, and step 150 reads
	// its start back with fetch_result instead.
	turns, total := make([]any, 0, steps+1), 0
	for i := range steps {
		call := map[string]any{"id": fmt.Sprintf("c_%d", i), "name": "echo", "arguments": map[string]any{"n": i, "note": strings.Repeat("x", 200)}}
		switch i {
		case 100:
			call["arguments"] = map[string]any{"n": i, "note": "BIG" + strings.Repeat("y", 3000)}
		case 150:
			call = map[string]any{"id": "c_150", "name": builtin.FetchResult, "arguments": map[string]any{"ref": "c_100"}}
		default:
			total += i
		}
		turns = append(turns, map[string]any{"text": fmt.Sprintf("step %d", i), "tool_calls": []any{call}})
	}
	total += 100 // read back at step 150
	answer := fmt.Sprintf("The total is %d.", total)
	turns = append(turns, map[string]any{"text": answer})
	script, err := json.Marshal(map[string]any{"provider": "script", "turns": turns})
	if err != nil {
		t.Fatal(err)
	}
	id := createRun(t, base, "r-long", "long", string(script))
	v := waitDone(t, base, id, 3*time.Minute)
	assertNaturalEnd(t, v, steps)

	msgs := getMessages(t, base, id)
	if last := msgs[len(msgs)-1]; last.Role != pipeline.RoleAssistant || last.Content != answer || len(msgs) != 2+2*steps {
		t.Fatalf("%d messages ending %+v; want %d ending with %q", len(msgs), last, 2+2*steps, answer)
	}
	if c := callOf(v, "c_150"); c.Status != pipeline.CallSucceeded || !strings.Contains(string(c.Result), `BIG`) {
		t.Errorf("fetch_result of c_100: %+v", c)
	}

	reqs := seen.all()
	if len(reqs) < steps+1 {
		t.Fatalf("%d requests recorded; want one a step, %d", len(reqs), steps+1)
	}
	summarised := 0
	for i, r := range reqs {
		if got := builtin.EstimateTokens(r.System, r.Messages, r.Tools); got > budget {
			t.Errorf("request %d: %d tokens, over the budget of %d", i, got, budget)
		}
		if r.Messages[0].Content != "go" {
			t.Errorf("request %d starts with %q, not the run's input", i, r.Messages[0].Content)
		}
		if strings.Contains(fmt.Sprint(r.Messages), "Summary: the user wants the total") {
			summarised++
		}
	}
	if summarised < steps/2 {
		t.Errorf("%d of %d requests carried a summary", summarised, len(reqs))
	}

	compacted := eventsOf(runEvents(t, stack, id), pipeline.EventContextCompacted)
	if len(compacted) < 5 {
		t.Fatalf("%d context.compacted events", len(compacted))
	}
	var c builtin.Compacted
	if err := json.Unmarshal(compacted[len(compacted)-1].Data, &c); err != nil || c.From != 1 || c.Through <= c.From ||
		c.TokensBefore <= budget || c.TokensAfter > budget || !c.Summarised {
		t.Errorf("last context.compacted: %+v, %v", c, err)
	}
	var kept builtin.Summary
	if err := json.Unmarshal(getState(t, base, id)[builtin.SummaryKey.Name], &kept); err != nil || kept.Through != c.Through ||
		!strings.HasPrefix(kept.Text, "Summary:") {
		t.Errorf("state %s: %+v, %v", builtin.SummaryKey.Name, kept, err)
	}
}
