package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// AG-UI 1.0: POST /v1/ag-ui/run takes a RunAgentInput and streams the
// protocol's events as SSE. An AG-UI thread is a stepwise chat thread (a
// run per user message, chat.go); an AG-UI run is one response: the
// events of the turn's run from its start, or, for an input that answers
// interrupts (resume) or outputs of frontend tools' calls (tool
// messages), from where the run stopped for them. A stepwise run that
// parks calls for approval ends its AG-UI run with the interrupt outcome,
// one interrupt per such call; one that waits only for the client's
// frontend tools ends it with success, their calls named in
// pendingToolCallIds, as AG-UI 1.0 says a run that stopped on frontend
// tool calls does.

// aguiInput is RunAgentInput, with what stepwise reads of it. Its
// forwardedProps may name the agent of the thread's first turn, and as in
// POST /v1/runs a script model and metadata. Tools and context are the
// frontend's; stepwise's agents have their own.
type aguiInput struct {
	ThreadID       string        `json:"threadId"`
	RunID          string        `json:"runId"`
	Messages       []aguiMessage `json:"messages"`
	ForwardedProps struct {
		Agent    string          `json:"agent"`
		Model    json.RawMessage `json:"model"`
		Metadata json.RawMessage `json:"metadata"`
	} `json:"forwardedProps"`
	Resume []struct {
		InterruptID string          `json:"interruptId"`
		Status      string          `json:"status"`
		Payload     json.RawMessage `json:"payload"`
	} `json:"resume"`
}

// aguiMessage is an AG-UI message; content is text or content parts. A
// tool message answers the call toolCallId; error says why the tool
// failed, when it did.
type aguiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"toolCallId"`
	Error      string          `json:"error"`
}

// output is a tool message's content as a call's result: the JSON it
// holds (AG-UI carries structured results as JSON text, and stepwise's
// TOOL_CALL_RESULT sends them so), or, for text that is not JSON, the
// text as a JSON string.
func (m aguiMessage) output() json.RawMessage {
	text := m.text()
	if json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	b, _ := json.Marshal(text)
	return b
}

// text is the message's text: its content, or its text parts joined.
func (m aguiMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	for _, p := range parts {
		if p.Type == "text" {
			s += p.Text
		}
	}
	return s
}

// aguiRun serves POST /v1/ag-ui/run.
func (s *Server) aguiRun(w http.ResponseWriter, r *http.Request) {
	var in aguiInput
	cs, ok := s.chatRequest(w, r, "RunAgentInput", &in, in.turn)
	if !ok {
		return
	}
	release, ok := s.acquireStream(w, r)
	if !ok {
		return
	}
	defer release()
	rc, ok := s.startSSE(w, r, cs.run.ID)
	if !ok {
		return
	}
	es := &eventStream{w: w, rc: rc, timeout: s.cfg.StreamWriteTimeout}
	sink := &aguiStream{es: es, ctx: r.Context(), s: s, threadID: in.ThreadID, runID: in.RunID, stepwiseRun: cs.run.ID,
		clientCalls: newClientCalls(s.cfg.ClientTools)}
	err := es.data(aguiEvent{"type": "RUN_STARTED", "threadId": in.ThreadID, "runId": in.RunID,
		"metadata": map[string]string{"stepwise_run_id": cs.run.ID}})
	if err == nil {
		err = s.streamTurn(r.Context(), es, cs, sink)
	}
	s.streamFailed(r.Context(), cs.run.ID, err)
}

// turn reads what the input asks of its thread: a user message to answer,
// or answers to the interrupts of the thread's last run (resume), or the
// outputs of its frontend tools' calls: the tool messages after the last
// user message (those before it are earlier turns'; the client sends its
// whole history).
func (in *aguiInput) turn() (chatTurn, *apiError) {
	if ae := checkThreadID("threadId", in.ThreadID); ae != nil {
		return chatTurn{}, ae
	}
	if in.RunID == "" {
		return chatTurn{}, invalid("runId is missing")
	}
	t := chatTurn{thread: in.ThreadID, agent: in.ForwardedProps.Agent, model: in.ForwardedProps.Model, metadata: in.ForwardedProps.Metadata}
	var last string
	for i, m := range in.Messages {
		switch {
		case m.Role == "tool":
			if m.ToolCallID == "" {
				return chatTurn{}, invalid("messages[%d] is a tool message without a toolCallId", i)
			}
			t.answers = append(t.answers, outputAnswer(m.ToolCallID, m.output(), m.Error != "", m.Error))
			continue
		case m.Role == "activity" || m.Role == "reasoning":
			continue
		case !t.add(m.Role, m.text()):
			return chatTurn{}, invalid("messages[%d].role is %q, want user, assistant, system, developer, tool, activity or reasoning", i, m.Role)
		}
		last = m.Role
		if m.Role == "user" {
			t.answers = nil // outputs of an earlier turn's calls
		}
	}
	for i, res := range in.Resume {
		callID, ok := splitApprovalID(res.InterruptID)
		if !ok {
			return chatTurn{}, invalid("resume[%d].interruptId %q is not an interrupt stepwise sent", i, res.InterruptID)
		}
		a := chatAnswer{decisionID: approvalDecisionID(res.InterruptID), callID: callID, payload: res.Payload}
		switch res.Status {
		case "resolved":
			a.resume = true
		case "cancelled":
			a.reason = "cancelled from the AG-UI client"
		default:
			return chatTurn{}, invalid("resume[%d].status is %q, want resolved or cancelled", i, res.Status)
		}
		t.answers = append(t.answers, a)
	}
	if len(t.answers) == 0 && last == "user" && t.user == "" {
		return chatTurn{}, invalid("the last message is the user's and has no text")
	}
	return t, nil
}

// aguiEvent is one AG-UI event.
type aguiEvent map[string]any

// aguiStream writes a run's chat as AG-UI events. Each step's text is a
// message of its own (the step's text id); a call's arguments come whole,
// in one TOOL_CALL_ARGS. A call parked for approval is an interrupt of the
// response's end; a call of a tool the client runs (clientCalls) asks for
// none: it is pending, the client's to answer with a tool message. A call
// that ends in the response (a replay's) is neither.
type aguiStream struct {
	es                           *eventStream
	ctx                          context.Context
	s                            *Server
	threadID, runID, stepwiseRun string
	clientCalls                  clientCalls
	interrupts                   []aguiEvent
	pending                      []string // ids of the client's calls that wait for it
}

func (a *aguiStream) stepName(step int) string { return "step " + strconv.Itoa(step) }

func (a *aguiStream) stepStart(step int) error {
	return a.es.data(aguiEvent{"type": "STEP_STARTED", "stepName": a.stepName(step)})
}

func (a *aguiStream) stepEnd(step int) error {
	return a.es.data(aguiEvent{"type": "STEP_FINISHED", "stepName": a.stepName(step)})
}

func (a *aguiStream) textStart(id string) error {
	return a.es.data(aguiEvent{"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"})
}

func (a *aguiStream) textDelta(id, delta string) error {
	return a.es.data(aguiEvent{"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": delta})
}

func (a *aguiStream) textEnd(id string) error {
	return a.es.data(aguiEvent{"type": "TEXT_MESSAGE_END", "messageId": id})
}

func (a *aguiStream) toolInput(callID, tool string, args json.RawMessage) error {
	a.clientCalls.see(callID, tool)
	if err := a.es.data(aguiEvent{"type": "TOOL_CALL_START", "toolCallId": callID, "toolCallName": tool}); err != nil {
		return err
	}
	if err := a.es.data(aguiEvent{"type": "TOOL_CALL_ARGS", "toolCallId": callID, "delta": string(jsonOr(args, "{}"))}); err != nil {
		return err
	}
	return a.es.data(aguiEvent{"type": "TOOL_CALL_END", "toolCallId": callID})
}

// approvalRequest keeps the interrupt for the run's end, or for a call
// the client runs, its id as pending.
func (a *aguiStream) approvalRequest(approvalID, callID string, p pipeline.Parking) error {
	if a.clientCalls.has(callID) {
		a.pending = append(a.pending, callID)
		return nil
	}
	in := aguiEvent{"id": approvalID, "reason": "tool_approval", "toolCallId": callID,
		"message":  orRaw(p.Reason, "call "+callID+" waits for approval"),
		"metadata": map[string]any{"ticket": p.Ticket, "args_hash": p.ArgsHash, "resume_mode": p.ResumeMode}}
	if !p.Deadline.IsZero() {
		in["expiresAt"] = p.Deadline.UTC().Format(time.RFC3339Nano)
	}
	a.interrupts = append(a.interrupts, in)
	return nil
}

// result sends a call's end; the call waits for nothing any more.
func (a *aguiStream) result(callID, content string) error {
	a.pending = slices.DeleteFunc(a.pending, func(id string) bool { return id == callID })
	a.interrupts = slices.DeleteFunc(a.interrupts, func(in aguiEvent) bool { return in["toolCallId"] == callID })
	return a.es.data(aguiEvent{"type": "TOOL_CALL_RESULT", "messageId": a.stepwiseRun + ":result:" + callID,
		"toolCallId": callID, "content": content, "role": "tool"})
}

func (a *aguiStream) toolOutput(callID string, result json.RawMessage) error {
	return a.result(callID, string(jsonOr(result, "null")))
}

func (a *aguiStream) toolError(callID, msg string) error {
	b, _ := json.Marshal(map[string]string{"error": orRaw(msg, "the tool call failed")})
	return a.result(callID, string(b))
}

func (a *aguiStream) toolDenied(callID, reason string) error {
	b, _ := json.Marshal(map[string]string{"cancelled": orRaw(reason, "the call was cancelled")})
	return a.result(callID, string(b))
}

// finish sends the run's plugin state, then RUN_FINISHED with the
// outcome (interrupt for a run that waits for approvals, cancelled, or
// success with the run's termination as the result, and the client's
// calls it waits for as pendingToolCallIds), or RUN_ERROR.
func (a *aguiStream) finish(t pipeline.Termination) error {
	state, err := a.s.cfg.Store.RunState(a.ctx, a.stepwiseRun)
	if err != nil {
		return fmt.Errorf("state of run %s: %w", a.stepwiseRun, err)
	}
	if err := a.es.data(aguiEvent{"type": "STATE_SNAPSHOT", "snapshot": state}); err != nil {
		return err
	}
	if t.Reason == pipeline.ReasonError {
		return a.es.data(aguiEvent{"type": "RUN_ERROR", "message": orRaw(t.Detail, "the run failed"), "code": string(t.Reason)})
	}
	ev := aguiEvent{"type": "RUN_FINISHED", "threadId": a.threadID, "runId": a.runID}
	switch {
	case t.Reason == pipeline.ReasonSuspended && len(a.interrupts) > 0:
		ev["outcome"] = aguiEvent{"type": "interrupt", "interrupts": a.interrupts}
	case t.Reason == pipeline.ReasonCancelled:
		ev["outcome"] = aguiEvent{"type": "cancelled"}
	default:
		outcome := aguiEvent{"type": "success"}
		if t.Reason == pipeline.ReasonSuspended && len(a.pending) > 0 {
			outcome["pendingToolCallIds"] = a.pending
		}
		ev["outcome"] = outcome
		ev["result"] = map[string]any{"stepwise_run_id": a.stepwiseRun, "termination": t}
	}
	return a.es.data(ev)
}
