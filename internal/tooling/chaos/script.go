package chaos

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// agentName is the agent every chaos run uses; its tools are the built-in
// echo and sleep.
const agentName = "chaos"

// runInput is the user message of every run.
const runInput = "Run the chaos script."

// sleepChoices are the durations, in ms, a sleep call may take: from a few
// ms to about 200 ms, so calls end in every order and a kill often finds a
// tool running.
var sleepChoices = []int{3, 10, 25, 60, 120, 200}

// maxInferenceMS bounds the scripted inference delay of a step: long
// enough that a killed step worker often dies holding a step.
const maxInferenceMS = 250

// Long work, for the rolling restart, in multiples of the workers'
// shutdown grace. A third of the sleep calls take one of longSleeps: the
// first two always finish within the grace of a worker stopped while it
// runs them, the last two are abandoned and handed over when the stop
// comes in their first 0.3 or 0.7 grace, and finish otherwise. A sixth of
// the steps take longInference to infer, so step workers abandon work too.
var longSleeps = []float64{0.5, 0.8, 1.3, 1.7}

const longInference = 1.3

// scriptModel is a run's own script model, as POST /v1/runs takes it.
type scriptModel struct {
	Provider string `json:"provider"`
	Turns    []turn `json:"turns"`
}

type turn struct {
	Text      string     `json:"text"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
	DelayMS   int        `json:"delay_ms,omitempty"`
}

type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// calls returns how many tool calls the script makes in all.
func (s scriptModel) calls() int { return s.callsFrom(0) }

// callsFrom returns how many tool calls the script makes from step on.
func (s scriptModel) callsFrom(step int) int {
	n := 0
	for _, t := range s.Turns[min(step, len(s.Turns)):] {
		n += len(t.ToolCalls)
	}
	return n
}

// countFrom returns how many calls of tool the script makes from step on.
func (s scriptModel) countFrom(step int, tool string) int {
	n := 0
	for _, t := range s.Turns[min(step, len(s.Turns)):] {
		for _, c := range t.ToolCalls {
			if c.Name == tool {
				n++
			}
		}
	}
	return n
}

// newScript returns the script of variant v: steps turns of 2 or 3
// parallel calls of echo and sleep, each turn after an inference delay of
// up to maxInferenceMS, then a final answer. With grace > 0, some of the
// work is long (see longSleeps), for a rolling restart with that shutdown
// grace; with 0, the scripts are those of the kill churn. With compose,
// the variants composedVariant names also start child runs and hand the
// run over (see compose). The same seed, variant, steps, grace and compose
// give the same script; runID only goes into the echo arguments (so each
// run's history is its own, and a result that strays into another run
// shows).
func newScript(seed uint64, v, steps int, runID string, grace time.Duration, compose bool) scriptModel {
	rng := rand.New(rand.NewPCG(seed, uint64(v)))
	times := func(f float64) int { return int(f * float64(grace.Milliseconds())) }
	s := scriptModel{Provider: "script"}
	for step := range steps {
		t := turn{Text: fmt.Sprintf("Step %d of variant %d.", step, v), DelayMS: rng.IntN(maxInferenceMS + 1)}
		if grace > 0 && rng.IntN(6) == 0 {
			t.DelayMS = times(longInference)
		}
		n := 2 + rng.IntN(2)
		for k := range n {
			if rng.IntN(2) == 0 {
				t.ToolCalls = append(t.ToolCalls, toolCall{Name: "echo", Arguments: map[string]any{
					"run": runID, "step": step, "call": k, "note": fmt.Sprintf("v%d-%d-%d", v, step, rng.IntN(1000)),
				}})
			} else {
				ms := sleepChoices[rng.IntN(len(sleepChoices))]
				if grace > 0 && rng.IntN(3) == 0 {
					ms = times(longSleeps[rng.IntN(len(longSleeps))])
				}
				t.ToolCalls = append(t.ToolCalls, toolCall{Name: "sleep", Arguments: map[string]any{"ms": ms}})
			}
		}
		s.Turns = append(s.Turns, t)
	}
	s.Turns = append(s.Turns, turn{Text: fmt.Sprintf("Variant %d is done.", v), DelayMS: rng.IntN(21)})
	if compose && composedVariant(v) {
		composeScript(&s, seed, v)
	}
	return s
}

// createRequest is the body of one item of POST /v1/runs/batch: a run
// with its own script, or, without one, a run of its agent's model.
type createRequest struct {
	RunID string       `json:"run_id"`
	Agent string       `json:"agent"`
	Input string       `json:"input"`
	Model *scriptModel `json:"model,omitempty"`
}
