package store_test

import (
	"encoding/json"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// What the step worker found checking a resume: a refusal rejects the
// decision and changes nothing else; a block applies it and fails the call.
var resumeCheckCases = []contractCase{
	{"a_refused_resume_is_rejected_with_its_reason_and_the_call_stays_parked", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumePassDecisionToTool, at(2), "c1")
		d := resume("d1", "c1")
		d.Payload = json.RawMessage(`{"amount":"a million"}`)
		d.Refuse = `payload does not fit "tool": amount: want number`
		res := f.decide(t, "r1", d, at(10))
		if res.Outcome != store.DecisionRejected || res.Call.Status != pipeline.CallSuspended || res.Run.Status != pipeline.RunWaiting {
			t.Fatalf("result = %+v", res)
		}
		evs := f.events(t, "r1")
		wantJSON(t, evs[len(evs)-1].Data, `{"decision_id":"d1","reason":"payload does not fit \"tool\": amount: want number"}`)
		wantJSON(t, res.Call.Arguments, `{"n":0}`)
		if again := f.decide(t, "r1", d, at(11)); again.Outcome != store.DecisionDuplicate {
			t.Fatalf("the same decision again: %+v", again)
		}
		// A cancel is never refused: it runs nothing.
		c := resume("d2", "c1")
		c.Action = store.ActionCancel
		c.Refuse = "ignored"
		if res := f.decide(t, "r1", c, at(12)); res.Outcome != store.DecisionApplied || res.Call.Status != pipeline.CallCancelled {
			t.Fatalf("cancel = %+v", res)
		}
	}},
	{"a_blocked_resume_applies_and_fails_the_call_without_running_it", func(t *testing.T, f *fixture) {
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1")
		d := resume("d1", "c1")
		d.Block = `tool "t" is denied by policy`
		res := f.decide(t, "r1", d, at(10))
		if res.Outcome != store.DecisionApplied || res.Call.Status != pipeline.CallFailed || res.Call.Error != d.Block || res.Call.Gate != pipeline.GateBlock {
			t.Fatalf("result = %+v", res)
		}
		evs := f.events(t, "r1")
		evs = evs[len(evs)-3:]
		wantTypes(t, typesOf(evs), pipeline.EventDecisionApplied, pipeline.EventRunResumed, pipeline.EventToolCallFinished)
		wantJSON(t, evs[2].Data, `{"status":"failed","error":"tool \"t\" is denied by policy"}`)
	}},
}
