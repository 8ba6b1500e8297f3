package stop_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/stop"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func call(tool, args string, status pipeline.ToolCallStatus) stop.Call {
	return stop.Call{Tool: tool, Arguments: json.RawMessage(args), Status: status}
}

func ok(tool, args string) stop.Call   { return call(tool, args, pipeline.CallSucceeded) }
func fail(tool, args string) stop.Call { return call(tool, args, pipeline.CallFailed) }

// steps numbers the given call lists as the steps ending with last.
func steps(last int, calls ...[]stop.Call) []stop.StepRecord {
	out := make([]stop.StepRecord, len(calls))
	for i, cs := range calls {
		out[i] = stop.StepRecord{Step: last - len(calls) + 1 + i, Calls: cs}
	}
	return out
}

// at is a state at the end of step last with these steps' calls.
func at(last int, calls ...[]stop.Call) stop.State {
	return stop.State{Step: last, Steps: steps(last, calls...)}
}

func cs(c ...stop.Call) []stop.Call { return c }

type evalCase struct {
	name   string
	stop   config.Stop
	state  stop.State
	code   string // "" for no termination
	detail string
}

func runEval(t *testing.T, tests []evalCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := stop.Compile(tt.stop)
			if err != nil {
				t.Fatal(err)
			}
			got := c.Evaluate(tt.state)
			if tt.code == "" {
				if got != nil {
					t.Fatalf("Evaluate fired %+v, want nil", *got)
				}
				return
			}
			want := pipeline.Termination{Reason: pipeline.ReasonStopped, Code: tt.code, Detail: tt.detail}
			if got == nil || *got != want {
				t.Fatalf("Evaluate = %+v, want %+v", got, want)
			}
		})
	}
}

func TestEvaluate_max_rounds_counts_ended_steps(t *testing.T) {
	s := config.Stop{MaxRounds: 3}
	runEval(t, []evalCase{
		{"first step of three", s, stop.State{Step: 0}, "", ""},
		{"second step of three", s, stop.State{Step: 1}, "", ""},
		{"third step ends the run", s, stop.State{Step: 2}, stop.CodeMaxRounds, "3 of 3 rounds"},
		{"past the limit still fires", s, stop.State{Step: 7}, stop.CodeMaxRounds, "8 of 3 rounds"},
		{"one round ends after step 0", config.Stop{MaxRounds: 1}, stop.State{Step: 0}, stop.CodeMaxRounds, "1 of 1 rounds"},
		{"zero disables", config.Stop{}, stop.State{Step: 1 << 20}, "", ""},
	})
}

func TestEvaluate_timeout_is_wall_clock_since_start(t *testing.T) {
	s := config.Stop{Timeout: config.D(10 * time.Minute)}
	since := func(d time.Duration) stop.State { return stop.State{StartedAt: t0, Now: t0.Add(d)} }
	runEval(t, []evalCase{
		{"just under", s, since(10*time.Minute - time.Nanosecond), "", ""},
		{"exactly the limit", s, since(10 * time.Minute), stop.CodeTimeout, "ran 10m, limit 10m"},
		{"past it, shown in whole seconds", s, since(10*time.Minute + 2*time.Second + 900*time.Millisecond), stop.CodeTimeout, "ran 10m2s, limit 10m"},
		{"hours", config.Stop{Timeout: config.D(time.Hour)}, since(90 * time.Minute), stop.CodeTimeout, "ran 1h30m, limit 1h"},
		{"sub-second limit in milliseconds", config.Stop{Timeout: config.D(1500 * time.Millisecond)}, since(1500*time.Millisecond + 250*time.Microsecond), stop.CodeTimeout, "ran 1.5s, limit 1.5s"},
		{"clock behind the start", s, since(-time.Hour), "", ""},
		{"unknown start does not fire", s, stop.State{Now: t0}, "", ""},
		{"unknown now does not fire", s, stop.State{StartedAt: t0}, "", ""},
		{"zero disables", config.Stop{}, since(1000 * time.Hour), "", ""},
	})
}

func TestEvaluate_token_budget_is_input_plus_output(t *testing.T) {
	s := config.Stop{TokenBudget: 20000}
	used := func(in, out int64) stop.State {
		return stop.State{Usage: pipeline.Usage{InputTokens: in, OutputTokens: out}}
	}
	runEval(t, []evalCase{
		{"one under", s, used(15000, 4999), "", ""},
		{"exactly the budget", s, used(15000, 5000), stop.CodeTokenBudget, "used 20000 of 20000 tokens"},
		{"over", s, used(18000, 2500), stop.CodeTokenBudget, "used 20500 of 20000 tokens"},
		{"input alone counts", s, used(20000, 0), stop.CodeTokenBudget, "used 20000 of 20000 tokens"},
		{"output alone counts", s, used(0, 20000), stop.CodeTokenBudget, "used 20000 of 20000 tokens"},
		{"zero disables", config.Stop{}, used(1<<40, 1<<40), "", ""},
	})
}

func TestEvaluate_consecutive_errors_counts_steps_with_a_failed_call(t *testing.T) {
	s := config.Stop{ConsecutiveErrors: 3}
	bad := cs(ok("a", `{}`), fail("b", `{}`))
	good := cs(ok("a", `{}`))
	runEval(t, []evalCase{
		{"three in a row", s, at(4, good, bad, bad, bad), stop.CodeConsecutiveErrors, "3 steps in a row had a failed tool call"},
		{"three in a row from step 0", s, at(2, bad, bad, bad), stop.CodeConsecutiveErrors, "3 steps in a row had a failed tool call"},
		{"two in a row", s, at(3, good, good, bad, bad), "", ""},
		{"broken by a good step", s, at(3, bad, good, bad, bad), "", ""},
		{"this step good", s, at(3, bad, bad, bad, good), "", ""},
		{"one failed call among many is enough", s, at(2, cs(ok("a", `1`), ok("a", `2`), fail("a", `3`)), bad, bad), stop.CodeConsecutiveErrors, "3 steps in a row had a failed tool call"},
		{"cancelled is not an error", s, at(2, bad, cs(call("a", `{}`, pipeline.CallCancelled)), bad), "", ""},
		{"a step without calls is not an error", s, at(2, bad, nil, bad), "", ""},
		{"one", config.Stop{ConsecutiveErrors: 1}, at(0, bad), stop.CodeConsecutiveErrors, "1 step in a row had a failed tool call"},
		{"not enough history loaded", s, at(5, bad, bad), "", ""},
		{
			"a gap in the history breaks the streak", s,
			stop.State{Step: 5, Steps: []stop.StepRecord{{Step: 2, Calls: bad}, {Step: 4, Calls: bad}, {Step: 5, Calls: bad}}},
			"", "",
		},
		{
			"history not ending with this step is not read", s,
			stop.State{Step: 3, Steps: steps(2, bad, bad, bad)},
			"", "",
		},
		{"zero disables", config.Stop{}, at(3, bad, bad, bad, bad), "", ""},
	})
}

func TestEvaluate_stop_on_tool_fires_on_a_call_of_this_step(t *testing.T) {
	s := config.Stop{StopOnTool: []string{"finish", "give_up"}}
	runEval(t, []evalCase{
		{"called", s, at(0, cs(ok("finish", `{}`))), stop.CodeStopOnTool, "the model called finish"},
		{"among other calls", s, at(1, nil, cs(ok("lookup", `{}`), ok("give_up", `{}`))), stop.CodeStopOnTool, "the model called give_up"},
		{"first listed call in call order names the tool", s, at(0, cs(ok("give_up", `{}`), ok("finish", `{}`))), stop.CodeStopOnTool, "the model called give_up"},
		{"whatever its status", s, at(0, cs(fail("finish", `{}`))), stop.CodeStopOnTool, "the model called finish"},
		{"cancelled counts too", s, at(0, cs(call("finish", `{}`, pipeline.CallCancelled))), stop.CodeStopOnTool, "the model called finish"},
		{"other tools", s, at(0, cs(ok("lookup", `{}`), ok("finisher", `{}`))), "", ""},
		{"names are case sensitive", s, at(0, cs(ok("Finish", `{}`))), "", ""},
		{"only this step counts", s, at(1, cs(ok("finish", `{}`)), cs(ok("lookup", `{}`))), "", ""},
		{"no calls", s, at(0, nil), "", ""},
		{"no steps given", s, stop.State{Step: 3}, "", ""},
		{"empty list disables", config.Stop{StopOnTool: []string{}}, at(0, cs(ok("finish", `{}`))), "", ""},
	})
}

func TestEvaluate_content_match_reads_this_steps_text(t *testing.T) {
	s := config.Stop{ContentMatch: "(?i)all done"}
	text := func(last int, texts ...string) stop.State {
		st := stop.State{Step: last}
		for i, tx := range texts {
			st.Steps = append(st.Steps, stop.StepRecord{Step: last - len(texts) + 1 + i, AssistantText: tx})
		}
		return st
	}
	runEval(t, []evalCase{
		{"matches", s, text(0, "We are ALL DONE here."), stop.CodeContentMatch, "the answer matched (?i)all done"},
		{"does not match", s, text(0, "almost done"), "", ""},
		{"an earlier step's text is not read", s, text(1, "all done", "working"), "", ""},
		{"anchored pattern", config.Stop{ContentMatch: `^DONE$`}, text(0, "DONE"), stop.CodeContentMatch, "the answer matched ^DONE$"},
		{"anchored pattern, extra text", config.Stop{ContentMatch: `^DONE$`}, text(0, "DONE."), "", ""},
		{"empty text can match", config.Stop{ContentMatch: `^$`}, text(0, ""), stop.CodeContentMatch, "the answer matched ^$"},
		{"no steps given", config.Stop{ContentMatch: `^$`}, stop.State{Step: 0}, "", ""},
		{"empty disables", config.Stop{}, text(0, "all done"), "", ""},
	})
}

func TestEvaluate_loop_detection_compares_canonical_call_sets(t *testing.T) {
	s := config.Stop{LoopDetection: 4}
	echo := cs(ok("echo", `{"x":1}`))
	runEval(t, []evalCase{
		{"four in a row", s, at(3, echo, echo, echo, echo), stop.CodeLoopDetection, `the same call echo {"x":1} was made in 4 consecutive steps`},
		{"three in a row", s, at(4, cs(ok("echo", `{"x":2}`)), echo, echo, echo), "", ""},
		{"broken in the middle", s, at(4, echo, echo, cs(ok("echo", `{"x":2}`)), echo, echo), "", ""},
		{"not enough history loaded", s, at(9, echo, echo, echo), "", ""},
		{
			"key order and spacing do not matter", s,
			at(3, cs(ok("f", `{"a":1,"b":[1,2]}`)), cs(ok("f", `{"b":[1, 2],"a":1}`)), cs(ok("f", ` { "b" : [1,2] , "a" : 1 } `)), cs(ok("f", `{"b":[1,2],"a":1}`))),
			stop.CodeLoopDetection, `the same call f {"a":1,"b":[1,2]} was made in 4 consecutive steps`,
		},
		{
			"nested key order does not matter", config.Stop{LoopDetection: 2},
			at(1, cs(ok("f", `{"o":{"y":1,"x":2}}`)), cs(ok("f", `{"o":{"x":2,"y":1}}`))),
			stop.CodeLoopDetection, `the same call f {"o":{"x":2,"y":1}} was made in 2 consecutive steps`,
		},
		{
			"empty arguments equal {}", config.Stop{LoopDetection: 2},
			at(1, cs(ok("now", ``)), cs(ok("now", `{}`))),
			stop.CodeLoopDetection, `the same call now {} was made in 2 consecutive steps`,
		},
		{"values differ", config.Stop{LoopDetection: 2}, at(1, cs(ok("f", `{"a":1}`)), cs(ok("f", `{"a":"1"}`))), "", ""},
		{"numbers keep their written form", config.Stop{LoopDetection: 2}, at(1, cs(ok("f", `{"a":1}`)), cs(ok("f", `{"a":1.0}`))), "", ""},
		{"tools differ", config.Stop{LoopDetection: 2}, at(1, cs(ok("f", `{}`)), cs(ok("g", `{}`))), "", ""},
		{
			"call order within a step does not matter", config.Stop{LoopDetection: 2},
			at(1, cs(ok("a", `{"n":1}`), ok("b", `{}`)), cs(ok("b", `{}`), ok("a", `{"n":1}`))),
			stop.CodeLoopDetection, `the same calls b {}, a {"n":1} were made in 2 consecutive steps`,
		},
		{
			"status does not matter", config.Stop{LoopDetection: 2},
			at(1, cs(fail("f", `{}`)), cs(ok("f", `{}`))),
			stop.CodeLoopDetection, `the same call f {} was made in 2 consecutive steps`,
		},
		{"a repeated call is not the same as one call", config.Stop{LoopDetection: 2}, at(1, cs(ok("f", `{}`), ok("f", `{}`)), cs(ok("f", `{}`))), "", ""},
		{"a subset is not the same set", config.Stop{LoopDetection: 2}, at(1, cs(ok("f", `{}`), ok("g", `{}`)), cs(ok("f", `{}`))), "", ""},
		{
			"arguments that are not JSON compare by trimmed bytes", config.Stop{LoopDetection: 2},
			at(1, cs(ok("f", `not json`)), cs(ok("f", " not json\n"))),
			stop.CodeLoopDetection, `the same call f not json was made in 2 consecutive steps`,
		},
		{"steps without calls are not a loop", config.Stop{LoopDetection: 2}, at(1, nil, nil), "", ""},
		{"one fires on any step with calls", config.Stop{LoopDetection: 1}, at(0, echo), stop.CodeLoopDetection, `the same call echo {"x":1} was made in 1 consecutive step`},
		{
			"a gap in the history breaks the loop", config.Stop{LoopDetection: 2},
			stop.State{Step: 5, Steps: []stop.StepRecord{{Step: 3, Calls: echo}, {Step: 5, Calls: echo}}},
			"", "",
		},
		{"zero disables", config.Stop{}, at(5, echo, echo, echo, echo, echo, echo), "", ""},
	})
}

func TestEvaluate_loop_detection_detail_clips_long_arguments(t *testing.T) {
	long := `{"s":"` + strings.Repeat("é", 300) + `"}`
	c, err := stop.Compile(config.Stop{LoopDetection: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := c.Evaluate(at(1, cs(ok("f", long)), cs(ok("f", long))))
	if got == nil {
		t.Fatal("did not fire")
	}
	const prefix = `the same call f {"s":"`
	if len(got.Detail) > len(prefix)+200+len("… was made in 2 consecutive steps") {
		t.Errorf("detail is %d bytes long: %s", len(got.Detail), got.Detail)
	}
	if !utf8.ValidString(got.Detail) {
		t.Errorf("detail is not valid UTF-8 text: %q", got.Detail)
	}
}

// TestEvaluate_precedence_follows_the_documented_order fires every condition at once, then disables them
// one by one in the documented order: each time the next code is reported.
func TestEvaluate_precedence_follows_the_documented_order(t *testing.T) {
	loop := cs(fail("finish", `{"a":1}`))
	st := stop.State{
		Step:      2,
		StartedAt: t0,
		Now:       t0.Add(time.Hour),
		Usage:     pipeline.Usage{InputTokens: 100},
		Steps:     steps(2, loop, loop, loop),
	}
	st.Steps[2].AssistantText = "done"
	all := config.Stop{
		MaxRounds: 3, Timeout: config.D(time.Minute), TokenBudget: 100, ConsecutiveErrors: 3,
		StopOnTool: []string{"finish"}, ContentMatch: "done", LoopDetection: 3,
	}
	disable := []func(*config.Stop){
		func(s *config.Stop) { s.MaxRounds = 0 },
		func(s *config.Stop) { s.Timeout = config.Duration{} },
		func(s *config.Stop) { s.TokenBudget = 0 },
		func(s *config.Stop) { s.ConsecutiveErrors = 0 },
		func(s *config.Stop) { s.StopOnTool = nil },
		func(s *config.Stop) { s.ContentMatch = "" },
		func(s *config.Stop) { s.LoopDetection = 0 },
	}
	order := []string{
		stop.CodeMaxRounds, stop.CodeTimeout, stop.CodeTokenBudget, stop.CodeConsecutiveErrors,
		stop.CodeStopOnTool, stop.CodeContentMatch, stop.CodeLoopDetection,
	}
	s := all
	for i, code := range order {
		c, err := stop.Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		got := c.Evaluate(st)
		if got == nil || got.Code != code || got.Reason != pipeline.ReasonStopped {
			t.Fatalf("with the first %d conditions disabled: Evaluate = %+v, want code %s", i, got, code)
		}
		disable[i](&s)
	}
	c, err := stop.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	if c.Enabled() {
		t.Error("every condition disabled, but Enabled() is true")
	}
	if got := c.Evaluate(st); got != nil {
		t.Errorf("every condition disabled, but Evaluate = %+v", got)
	}
}

func TestEvaluate_does_not_modify_the_state(t *testing.T) {
	c, err := stop.Compile(config.Stop{LoopDetection: 2, ConsecutiveErrors: 2})
	if err != nil {
		t.Fatal(err)
	}
	calls := cs(ok("b", `{"y":1,"x":2}`), ok("a", `{}`))
	st := at(1, calls, cs(ok("a", `{}`), ok("b", `{"x":2,"y":1}`)))
	c.Evaluate(st)
	if string(st.Steps[0].Calls[0].Arguments) != `{"y":1,"x":2}` || st.Steps[0].Calls[0].Tool != "b" {
		t.Errorf("Evaluate changed the caller's calls: %+v", st.Steps[0].Calls)
	}
}
