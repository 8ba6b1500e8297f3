package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

// recordSink writes what a chatFold asks for as lines.
type recordSink struct{ lines []string }

func (r *recordSink) add(format string, args ...any) error {
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
	return nil
}
func (r *recordSink) stepStart(step int) error         { return r.add("step %d", step) }
func (r *recordSink) stepEnd(step int) error           { return r.add("/step %d", step) }
func (r *recordSink) textStart(id string) error        { return r.add("text %s", id) }
func (r *recordSink) textDelta(id, delta string) error { return r.add("+%q", delta) }
func (r *recordSink) textEnd(id string) error          { return r.add("/text") }
func (r *recordSink) toolInput(callID, tool string, args json.RawMessage) error {
	return r.add("input %s %s %s", callID, tool, args)
}
func (r *recordSink) approvalRequest(approvalID, callID string, p pipeline.Parking) error {
	return r.add("approve? %s %s", approvalID, callID)
}
func (r *recordSink) toolOutput(callID string, result json.RawMessage) error {
	return r.add("output %s %s", callID, result)
}
func (r *recordSink) toolError(callID, msg string) error     { return r.add("error %s %s", callID, msg) }
func (r *recordSink) toolDenied(callID, reason string) error { return r.add("denied %s", callID) }
func (r *recordSink) finish(t pipeline.Termination) error    { return r.add("finish %s", t.Reason) }

func ev(id string, typ pipeline.EventType, step int, callID, data string) pipeline.Event {
	return pipeline.Event{ID: id, Type: typ, Step: step, CallID: callID, Data: json.RawMessage(data)}
}

func fold(events ...pipeline.Event) ([]string, bool) {
	var sink recordSink
	f := newChatFold(&sink, "r")
	done := false
	for _, e := range events {
		d, err := f.event(e)
		if err != nil {
			panic(err)
		}
		done = done || d
	}
	return sink.lines, done
}

// A step's text streamed as deltas is closed by the committed message,
// which adds only what the deltas did not carry: a reader that saw some
// deltas before the commit trimmed the rest gets the rest from it, and a
// reader that saw all of them gets nothing twice.
func TestChatFold_text_streamed_then_committed(t *testing.T) {
	started := ev("1-0", pipeline.EventStepStarted, 0, "", `{}`)
	committed := ev("1-4", pipeline.EventAssistantMessage, 0, "", `{"role":"assistant","content":"Hello world"}`)
	cases := map[string]struct {
		events []pipeline.Event
		want   []string
	}{
		"every delta read": {
			[]pipeline.Event{started, ev("1-1", pipeline.EventTextDelta, 0, "", `{"text":"Hello"}`),
				ev("1-2", pipeline.EventTextDelta, 0, "", `{"text":" world"}`), committed},
			[]string{"step 0", "text r:text:0", `+"Hello"`, `+" world"`, "/text"},
		},
		"the last deltas trimmed before they were read": {
			[]pipeline.Event{started, ev("1-1", pipeline.EventTextDelta, 0, "", `{"text":"Hello"}`), committed},
			[]string{"step 0", "text r:text:0", `+"Hello"`, `+" world"`, "/text"},
		},
		"no delta read": {
			[]pipeline.Event{started, committed},
			[]string{"step 0", "text r:text:0", `+"Hello world"`, "/text"},
		},
		"a retried inference that says something else": {
			[]pipeline.Event{started, ev("1-1", pipeline.EventTextDelta, 0, "", `{"text":"Goodbye"}`), committed},
			[]string{"step 0", "text r:text:0", `+"Goodbye"`, `+"Hello world"`, "/text"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got, _ := fold(c.events...); !slices.Equal(got, c.want) {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// Tool calls: input, approval request, each end; steps close; the run's
// end finishes the response, a suspension does not.
func TestChatFold_calls_and_the_end(t *testing.T) {
	got, done := fold(
		ev("1-0", pipeline.EventStepStarted, 0, "", `{}`),
		ev("1-1", pipeline.EventAssistantMessage, 0, "", `{"role":"assistant","content":""}`),
		ev("1-2", pipeline.EventToolCallCreated, 0, "a", `{"tool":"echo","arguments":{"x":1},"status":"new"}`),
		ev("1-3", pipeline.EventToolCallCreated, 0, "b", `{"tool":"refund","arguments":{},"status":"suspended"}`),
		ev("1-4", pipeline.EventToolCallParked, 0, "b", `{"ticket":"t"}`),
		ev("1-5", pipeline.EventToolCallCreated, 0, "c", `{"tool":"fail","arguments":{}}`),
		ev("1-6", pipeline.EventToolCallFinished, 0, "a", `{"status":"succeeded","result":{"x":1}}`),
		ev("1-7", pipeline.EventToolCallFinished, 0, "c", `{"status":"failed","error":"boom"}`),
		ev("1-8", pipeline.EventRunFinished, 0, "", `{"reason":"suspended"}`),
		ev("1-9", pipeline.EventToolCallFinished, 0, "b", `{"status":"cancelled","error":"no"}`),
		ev("1-10", pipeline.EventStepEnded, 0, "", `{}`),
		ev("1-11", pipeline.EventStepStarted, 1, "", `{}`),
		ev("1-12", pipeline.EventAssistantMessage, 1, "", `{"role":"assistant","content":"ok"}`),
		ev("1-13", pipeline.EventRunFinished, 1, "", `{"reason":"natural_end"}`),
	)
	want := []string{
		"step 0", `input a echo {"x":1}`, "input b refund {}", "approve? b@1-4 b", "input c fail {}",
		`output a {"x":1}`, "error c boom", "denied b", "/step 0",
		"step 1", "text r:text:1", `+"ok"`, "/text", "/step 1", "finish natural_end",
	}
	if !done || !slices.Equal(got, want) {
		t.Fatalf("done %v\ngot  %q\nwant %q", done, got, want)
	}
}

func TestApprovalID_round_trip(t *testing.T) {
	for _, c := range []struct {
		id, call string
		ok       bool
	}{
		{approvalID("call_1_0", "1795573889687-2"), "call_1_0", true},
		{approvalID("a@b", "17-0"), "a@b", true},
		{"call_1_0", "", false},
		{"call_1_0@x", "", false},
		{"@17-0", "", false},
	} {
		call, ok := splitApprovalID(c.id)
		if ok != c.ok || call != c.call {
			t.Errorf("splitApprovalID(%q) = %q, %v; want %q, %v", c.id, call, ok, c.call, c.ok)
		}
	}
}
