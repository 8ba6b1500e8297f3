package gateway

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/stepwise-run/stepwise/pipeline"
)

// chatSink is a chat protocol's side of a run's event log: the AI SDK's UI
// message stream (aisdk.go) and AG-UI (agui.go) each write these in their
// own vocabulary. chatFold calls them in an order both protocols accept:
// a step opens before anything in it, a text part closes before the step
// does, a call's input comes before its approval request or its output.
type chatSink interface {
	stepStart(step int) error
	stepEnd(step int) error
	textStart(id string) error
	textDelta(id, delta string) error
	textEnd(id string) error
	toolInput(callID, tool string, args json.RawMessage) error
	approvalRequest(approvalID, callID string, p pipeline.Parking) error
	toolOutput(callID string, result json.RawMessage) error
	toolError(callID, msg string) error
	toolDenied(callID, reason string) error
	// finish ends the response: the run ended, or waits for the answers
	// to the approval requests it sent (reason suspended).
	finish(t pipeline.Termination) error
}

// approvalID names one parking of a call: the call's id and the id of the
// event that parked it, so a call that parks again asks anew (and its
// answer is another decision). splitApprovalID reverses it.
func approvalID(callID, eventID string) string { return callID + "@" + eventID }

// splitApprovalID returns the call id of an approval id.
func splitApprovalID(id string) (callID string, ok bool) {
	i := strings.LastIndexByte(id, '@')
	if i <= 0 || !eventIDPattern.MatchString(id[i+1:]) {
		return "", false
	}
	return id[:i], true
}

// chatFold turns a run's events into a chat protocol's, one response at a
// time: the replay of a whole run, or what follows a point in its log.
// Texts streamed as message.delta events are closed by the step's
// message.assistant, which adds only what the deltas did not carry (the
// deltas are trimmed when the step commits, so a reader that came late
// gets the whole text from it instead): nothing is lost, nothing repeated.
type chatFold struct {
	sink     chatSink
	runID    string
	step     int    // the open step, -1 when none is open
	text     string // id of the open text part, "" when none is
	streamed string // what the open text part has carried
}

func newChatFold(sink chatSink, runID string) *chatFold {
	return &chatFold{sink: sink, runID: runID, step: -1}
}

// textID names the text of a step.
func (f *chatFold) textID(step int) string { return f.runID + ":text:" + strconv.Itoa(step) }

// openStep opens step if another (or none) is open.
func (f *chatFold) openStep(step int) error {
	if f.step == step {
		return nil
	}
	if err := f.closeStep(); err != nil {
		return err
	}
	f.step = step
	return f.sink.stepStart(step)
}

// closeStep closes the open text part and step, if any.
func (f *chatFold) closeStep() error {
	if f.step < 0 {
		return nil
	}
	if f.text != "" {
		if err := f.sink.textEnd(f.text); err != nil {
			return err
		}
		f.text, f.streamed = "", ""
	}
	step := f.step
	f.step = -1
	return f.sink.stepEnd(step)
}

// event folds one event in. done is true once the response is finished;
// the caller decides for a run.finished of reason suspended whether the
// run waits (finishSuspended) or went on since (the event is skipped).
func (f *chatFold) event(ev pipeline.Event) (done bool, err error) {
	switch ev.Type {
	case pipeline.EventStepStarted:
		return false, f.openStep(ev.Step)
	case pipeline.EventTextDelta:
		var d struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(ev.Data, &d) != nil || d.Text == "" {
			return false, nil
		}
		if err := f.openStep(ev.Step); err != nil {
			return false, err
		}
		if f.text == "" {
			f.text = f.textID(ev.Step)
			if err := f.sink.textStart(f.text); err != nil {
				return false, err
			}
		}
		f.streamed += d.Text
		return false, f.sink.textDelta(f.text, d.Text)
	case pipeline.EventAssistantMessage:
		var m pipeline.Message
		if json.Unmarshal(ev.Data, &m) != nil {
			return false, nil
		}
		return false, f.assistant(ev.Step, m.Content)
	case pipeline.EventToolCallCreated:
		var d struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(ev.Data, &d) != nil {
			return false, nil
		}
		if err := f.openStep(ev.Step); err != nil {
			return false, err
		}
		return false, f.sink.toolInput(ev.CallID, d.Tool, d.Arguments)
	case pipeline.EventToolCallParked:
		var p pipeline.Parking
		if json.Unmarshal(ev.Data, &p) != nil || !p.AwaitsDecision() { // a child run's wait asks the client nothing
			return false, nil
		}
		return false, f.sink.approvalRequest(approvalID(ev.CallID, ev.ID), ev.CallID, p)
	case pipeline.EventToolCallFinished:
		var d struct {
			Status pipeline.ToolCallStatus `json:"status"`
			Result json.RawMessage         `json:"result"`
			Error  string                  `json:"error"`
		}
		if json.Unmarshal(ev.Data, &d) != nil {
			return false, nil
		}
		switch d.Status {
		case pipeline.CallSucceeded:
			return false, f.sink.toolOutput(ev.CallID, d.Result)
		case pipeline.CallCancelled:
			return false, f.sink.toolDenied(ev.CallID, d.Error)
		default:
			return false, f.sink.toolError(ev.CallID, d.Error)
		}
	case pipeline.EventStepEnded:
		return false, f.closeStep()
	case pipeline.EventRunFinished:
		t := termination(ev)
		if t.Reason == pipeline.ReasonSuspended {
			return false, nil
		}
		return true, f.finish(t)
	}
	return false, nil
}

// assistant closes a step's text with the committed content: the part of
// it the deltas did not carry, or all of it when none were read.
func (f *chatFold) assistant(step int, content string) error {
	if err := f.openStep(step); err != nil {
		return err
	}
	if f.text == "" {
		if content == "" {
			return nil
		}
		f.text = f.textID(step)
		if err := f.sink.textStart(f.text); err != nil {
			return err
		}
	}
	// A retried inference may say something else than the deltas of the
	// attempt that died; what was streamed stays, and the rest follows.
	rest, ok := strings.CutPrefix(content, f.streamed)
	if !ok {
		rest = content
	}
	if rest != "" {
		if err := f.sink.textDelta(f.text, rest); err != nil {
			return err
		}
	}
	err := f.sink.textEnd(f.text)
	f.text, f.streamed = "", ""
	return err
}

// finish closes what is open and ends the response.
func (f *chatFold) finish(t pipeline.Termination) error {
	if err := f.closeStep(); err != nil {
		return err
	}
	return f.sink.finish(t)
}

// termination reads a run.finished event's data.
func termination(ev pipeline.Event) pipeline.Termination {
	var t pipeline.Termination
	_ = json.Unmarshal(ev.Data, &t)
	return t
}
