package chaos

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// history builds what the gateway answers for a run of script s that ended
// as it should: its view, its messages and its event log. A call of
// childTool waits for its child (a suspended run.finished), which answers
// as childScript does; a call of handoffTool hands the run over.
func history(t *testing.T, id string, s scriptModel) (runView, json.RawMessage, []event) {
	t.Helper()
	v := runView{RunID: id, Status: "done", Step: len(s.Turns) - 1, Termination: &termination{Reason: "natural_end"}}
	msgs := []map[string]any{{"role": "user", "content": runInput}}
	evs := []event{{Type: evRunCreated}, {Type: evRunStarted}}
	answer := childScript.Turns[len(childScript.Turns)-1].Text
	for step, turn := range s.Turns {
		evs = append(evs, event{Type: evStepStarted, Step: step}, event{Type: evAssistant, Step: step})
		var calls []map[string]any
		results := make([]string, len(turn.ToolCalls))
		for k, c := range turn.ToolCalls {
			callID := fmt.Sprintf("call_%d_%d", step, k)
			args, _ := json.Marshal(c.Arguments)
			results[k] = string(args)
			switch c.Name {
			case childTool:
				results[k] = answer
				v.Children = append(v.Children, childView{RunID: id + "." + callID, CallID: callID, Status: "done"})
				evs = append(evs, event{Type: evRunFinished, Step: step, Data: json.RawMessage(`{"reason":"suspended"}`)})
			case handoffTool:
				evs = append(evs, event{Type: evHandoff, Step: step, CallID: callID})
			}
			result, _ := json.Marshal(results[k])
			if c.Name != childTool {
				result = args
			}
			v.ToolCalls = append(v.ToolCalls, callView{CallID: callID, Step: step, Tool: c.Name, Status: "succeeded", Arguments: args, Result: result, Gate: "allow"})
			calls = append(calls, map[string]any{"id": callID, "name": c.Name, "arguments": c.Arguments})
			evs = append(evs, event{Type: evCallCreated, Step: step, CallID: callID})
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": turn.Text, "tool_calls": calls})
		for k := range turn.ToolCalls {
			callID := fmt.Sprintf("call_%d_%d", step, k)
			msgs = append(msgs, map[string]any{"role": "tool", "content": results[k], "tool_call_id": callID})
			evs = append(evs, event{Type: evCallStarted, Step: step, CallID: callID}, event{Type: evCallFinished, Step: step, CallID: callID})
		}
		evs = append(evs, event{Type: evStepEnded, Step: step})
	}
	evs = append(evs, event{Type: evRunFinished, Step: len(s.Turns) - 1, Data: json.RawMessage(`{"reason":"natural_end"}`)})
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return v, b, evs
}

// newReference is the reference of variant v, of scripts that compose or
// not, checked.
func newReference(t *testing.T, v int, compose bool) *reference {
	t.Helper()
	id := fmt.Sprintf("chaos-abc-ref%02d", v)
	s := newScript(1, v, 3, id, 0, compose)
	view, msgs, evs := history(t, id, s)
	r := &reference{variant: v, runID: id, root: id, script: s, commits: commitCounts(evs)}
	var err error
	if r.hist, err = normalize(view, msgs, id); err != nil {
		t.Fatal(err)
	}
	if err := checkReference(r, view, evs); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestJudge_a_run_like_its_reference_is_right(t *testing.T) {
	ref := newReference(t, 3, false)
	id := "chaos-abc-0003"
	v, msgs, evs := history(t, id, newScript(1, 3, 3, id, 0, false))
	if vd := judge(ref, v, msgs, evs, true, id); !vd.done || len(vd.wrong) > 0 || len(vd.doubles) > 0 {
		t.Fatalf("verdict %+v, want done and right", vd)
	}
}

func TestJudge_a_tool_call_executed_twice_is_allowed_but_one_finished_twice_is_a_double_commit(t *testing.T) {
	ref := newReference(t, 1, false)
	id := "chaos-abc-0001"
	v, msgs, evs := history(t, id, newScript(1, 1, 3, id, 0, false))
	evs = append(evs, event{Type: evCallStarted, Step: 0, CallID: "call_0_0"})
	if vd := judge(ref, v, msgs, evs, true, id); len(vd.doubles) > 0 || len(vd.wrong) > 0 {
		t.Fatalf("a second tool_call.started: %+v, want right", vd)
	}
	if steps, calls := claimCounts(evs); steps != 0 || calls != 1 {
		t.Fatalf("claimCounts = %d, %d; want 0 steps, 1 call", steps, calls)
	}
	evs = append(evs, event{Type: evCallFinished, Step: 0, CallID: "call_0_0"}, event{Type: evAssistant, Step: 1})
	vd := judge(ref, v, msgs, evs, true, id)
	want := []string{"2 × message.assistant step 1", "2 × tool_call.finished call_0_0"}
	if strings.Join(vd.doubles, "|") != strings.Join(want, "|") {
		t.Fatalf("doubles %q, want %q", vd.doubles, want)
	}
}

func TestJudge_a_different_history_is_wrong(t *testing.T) {
	ref := newReference(t, 2, false)
	id := "chaos-abc-0002"
	s := newScript(1, 2, 3, id, 0, false)
	cases := map[string]func(v *runView, msgs *[]map[string]any){
		"another termination": func(v *runView, _ *[]map[string]any) {
			v.Termination = &termination{Reason: "error", Detail: "step 1 was claimed 50 times without finishing"}
		},
		"a failed call": func(v *runView, _ *[]map[string]any) { v.ToolCalls[1].Status = "failed" },
		"another run's result": func(_ *runView, msgs *[]map[string]any) {
			for _, m := range *msgs {
				if c, ok := m["content"].(string); ok && m["role"] == "tool" && strings.Contains(c, id) {
					m["content"] = strings.ReplaceAll(c, id, "chaos-abc-0018")
					return
				}
			}
			t.Fatal("no tool message carries the run id")
		},
		"a message missing": func(_ *runView, msgs *[]map[string]any) { *msgs = (*msgs)[:len(*msgs)-1] },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			v, raw, evs := history(t, id, s)
			var msgs []map[string]any
			if err := json.Unmarshal(raw, &msgs); err != nil {
				t.Fatal(err)
			}
			change(&v, &msgs)
			if vd := judge(ref, v, mustJSON(t, msgs), evs, true, id); len(vd.wrong) == 0 {
				t.Fatalf("verdict %+v, want wrong", vd)
			}
		})
	}
}

func TestJudge_a_commit_missing_from_the_event_log_is_wrong(t *testing.T) {
	ref := newReference(t, 0, false)
	id := "chaos-abc-0000"
	v, msgs, evs := history(t, id, newScript(1, 0, 3, id, 0, false))
	var kept []event
	for _, ev := range evs {
		if ev.Type != evStepEnded || ev.Step != 1 {
			kept = append(kept, ev)
		}
	}
	vd := judge(ref, v, msgs, kept, true, id)
	if len(vd.wrong) != 1 || vd.wrong[0] != "event log: missing step.ended step 1" {
		t.Fatalf("wrong %q", vd.wrong)
	}
	if got := category(vd.wrong[0]); got != "event log missing step.ended" {
		t.Fatalf("category %q", got)
	}
}

func TestJudge_a_run_not_done_is_stuck_not_wrong(t *testing.T) {
	ref := newReference(t, 0, false)
	id := "chaos-abc-0000"
	v, msgs, evs := history(t, id, newScript(1, 0, 3, id, 0, false))
	v.Status, v.Termination = "running", nil
	if vd := judge(ref, v, msgs, evs[:5], false, id); vd.done || len(vd.wrong) > 0 {
		t.Fatalf("verdict %+v, want not done and not wrong", vd)
	}
}

func TestCategory(t *testing.T) {
	for in, want := range map[string]string{
		"termination: error: step 1 was claimed 50 times at step 1, want natural_end at step 3": "termination error",
		"termination: none at step 2, want natural_end at step 3":                               "termination none",
		`message 4: {"a":1}, want {"a":2}`:                                                      "message differs",
		`tool call 2: {"a":1}, want {"a":2}`:                                                    "tool call differs",
		"event log: unexpected tool_call.created call_9_9, tool_call.finished call_9_9":         "event log unexpected tool_call.created,tool_call.finished",
		"run result: none on stepwise.run-results":                                              "run result",
	} {
		if got := category(in); got != want {
			t.Errorf("category(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewScript_is_deterministic_and_differs_by_variant(t *testing.T) {
	a, _ := json.Marshal(newScript(7, 2, 3, "r", 0, false))
	b, _ := json.Marshal(newScript(7, 2, 3, "r", 0, false))
	c, _ := json.Marshal(newScript(7, 3, 3, "r", 0, false))
	if string(a) != string(b) || string(a) == string(c) {
		t.Fatalf("same variant: %s / %s; other variant: %s", a, b, c)
	}
	s := newScript(7, 2, 3, "r", 0, false)
	if len(s.Turns) != 4 || len(s.Turns[3].ToolCalls) != 0 {
		t.Fatalf("want 3 tool steps and a final answer: %+v", s)
	}
	for _, turn := range s.Turns[:3] {
		if n := len(turn.ToolCalls); n < 2 || n > 3 {
			t.Fatalf("want 2 or 3 calls per step: %+v", turn)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
