// Package stop holds an agent's stop conditions: compiled once from
// config.Stop, evaluated at StepEnd over plain values. Like the rest of the
// domain it is pure: no I/O, no clock (the caller passes Now), no goroutines,
// no dependence on map order. A *Conditions is immutable after Compile and
// safe for concurrent use.
//
// # Usage
//
// The step worker compiles an agent's conditions once, and at StepEnd (every
// call of step N terminal, tool results appended, the run not already ended
// by a block or a natural end) loads only the history the conditions need:
//
//	conds, err := stop.Compile(agent.Stop) // at start-up; err names the field
//	...
//	if conds.Enabled() {
//		steps := stop.History(runCalls, run.Step, conds.NeedsHistory())
//		if len(steps) > 0 {
//			steps[len(steps)-1].AssistantText = assistantText // of step run.Step
//		}
//		t := conds.Evaluate(stop.State{
//			Step:      run.Step,
//			StartedAt: run.CreatedAt,
//			Now:       now,
//			Usage:     run.Usage, // cumulative, this step's inference included
//			Steps:     steps,
//		})
//		if t != nil { /* end the run with *t: reason stopped, t.Code, t.Detail */ }
//	}
//
// # Semantics
//
// A zero or empty setting disables its condition. "This step" is the step
// that just ended, State.Step; it is the last element of State.Steps when
// that element's Step equals State.Step, and otherwise the conditions that
// read steps see no steps at all. The conditions read exactly:
//
//   - max_rounds (MaxRounds n): State.Step only. Rounds are ended steps,
//     counted from 1, so it fires when Step+1 >= n: with n = 3 it fires at
//     the end of step 2, the third step. Detail "3 of 3 rounds".
//   - timeout (Timeout d): State.StartedAt and State.Now. Fires when
//     Now - StartedAt >= d, wall clock. When StartedAt or Now is the zero
//     time it does not fire (an unknown start is not a timeout). Detail
//     "ran 10m2s, limit 10m".
//   - token_budget (TokenBudget n): State.Usage. Fires when
//     InputTokens + OutputTokens >= n. Detail "used 20500 of 20000 tokens".
//   - consecutive_errors (ConsecutiveErrors n): the Calls[].Status of the
//     last n steps. A step is erroneous when at least one of its calls has
//     status failed (cancelled is not an error: a human said no, and the
//     model was told). Fires when the n steps Step-n+1 … Step are all present
//     in State.Steps, consecutive, and all erroneous. Detail
//     "3 steps in a row had a failed tool call".
//   - stop_on_tool (StopOnTool names): the Calls[].Tool of this step. Fires
//     when any call of this step names a listed tool, whatever the call's
//     status: the model asked for it. The first such call, in call order,
//     names the tool in the detail: "the model called finish".
//   - content_match (ContentMatch re): the AssistantText of this step. Fires
//     when the regular expression (Go RE2 syntax, compiled once by Compile)
//     matches anywhere in it; the empty text is matched too. Detail
//     "the answer matched (?i)all done".
//   - loop_detection (LoopDetection n): the Calls[].Tool and
//     Calls[].Arguments of the last n steps. A step's call set is the sorted
//     multiset of (tool, canonical arguments) pairs, canonical as in
//     pipeline.CanonicalJSON (key order and spacing do not matter; empty
//     arguments equal {}; arguments that are not JSON compare by their
//     trimmed bytes). Call order within a step and call status do not
//     matter. Fires when the n steps Step-n+1 … Step are all present,
//     consecutive, each made at least one call, and all have the same call
//     set. With n = 1 it fires on every step that made a call. Detail
//     `the same call echo {"x":1} was made in 4 consecutive steps`.
//
// # Precedence
//
// When several conditions fire at the same StepEnd, Evaluate reports the
// first in this order, the order of config.Stop and of the seeds:
// max_rounds, timeout, token_budget, consecutive_errors, stop_on_tool,
// content_match, loop_detection.
//
// # History
//
// NeedsHistory says how many of the most recent ended steps (this one
// included) Evaluate reads from State.Steps: the largest of
// consecutive_errors, loop_detection, and 1 when stop_on_tool or
// content_match is set; 0 when only max_rounds, timeout and token_budget
// are. Extra, older steps in State.Steps are ignored. Only this step's
// AssistantText is ever read, so older steps may leave it empty; History
// builds the records from the run's tool-call records.
package stop
