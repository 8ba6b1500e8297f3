package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// The AI SDK's chat protocol: POST /v1/ai-sdk/chat takes the body its
// DefaultChatTransport sends and answers with the UI message stream (SSE
// of JSON chunks, then [DONE]); GET /v1/ai-sdk/chat/{id}/stream replays
// the chat's latest turn for resumeStream. The transport's resume is a
// replay (resumeStreamIsReplay, the default of ai 6 and 7): the client
// rebuilds the message from the replay's start chunk, so a replay of the
// whole turn loses nothing and repeats nothing. One assistant message per
// turn, its id the turn's run id; a step of the run is a step of the
// message.

// aiSDKStreamHeader marks a UI message stream for the AI SDK's clients.
const aiSDKStreamHeader = "x-vercel-ai-ui-message-stream"

// aiSDKChatRequest is the body DefaultChatTransport sends, with the fields
// a transport's `body` option may add for stepwise: the agent of a chat's
// first turn, and as in POST /v1/runs, a script model and metadata.
// Other fields a version of the SDK sends are ignored.
type aiSDKChatRequest struct {
	ID        string          `json:"id"`
	Messages  []uiMessage     `json:"messages"`
	Trigger   string          `json:"trigger"`
	MessageID string          `json:"messageId"`
	Agent     string          `json:"agent"`
	Model     json.RawMessage `json:"model"`
	Metadata  json.RawMessage `json:"metadata"`
}

// uiMessage is a UIMessage of the AI SDK, with the parts stepwise reads.
type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

// uiPart is a part of a UIMessage: text, or a tool call ("tool-<name>" or
// "dynamic-tool") whose approval the user may have answered, or whose
// output the client may have added (addToolOutput).
type uiPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	State      string          `json:"state"`
	Output     json.RawMessage `json:"output"`
	ErrorText  string          `json:"errorText"`
	Approval   *struct {
		ID       string `json:"id"`
		Approved *bool  `json:"approved"`
		Reason   string `json:"reason"`
	} `json:"approval"`
}

// tool is the name of the part's tool: a dynamic tool's toolName, a
// static one's from its type.
func (p uiPart) tool() string {
	if p.Type == "dynamic-tool" {
		return p.ToolName
	}
	return strings.TrimPrefix(p.Type, "tool-")
}

// clientAnswer is the answer a part holds when the client executed its
// call (clientTool: a frontend tool) and added its output (outputAnswer:
// an output-error cancels the call).
func (p uiPart) clientAnswer(clientTool func(string) bool) (chatAnswer, bool) {
	if (p.State != "output-available" && p.State != "output-error") || p.ToolCallID == "" || !clientTool(p.tool()) {
		return chatAnswer{}, false
	}
	return outputAnswer(p.ToolCallID, p.Output, p.State == "output-error", p.ErrorText), true
}

// text is the message's text parts, joined.
func (m uiMessage) text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// aiSDKChat serves POST /v1/ai-sdk/chat.
func (s *Server) aiSDKChat(w http.ResponseWriter, r *http.Request) {
	var req aiSDKChatRequest
	turn := func() (chatTurn, *apiError) { return req.turn(s.cfg.ClientTools) }
	if cs, ok := s.chatRequest(w, r, "chat request", &req, turn); ok {
		s.serveUIStream(w, r, cs)
	}
}

// turn reads what the request asks of its chat: a user message to answer,
// or the answers the last (assistant) message holds: approval responses,
// and outputs of calls of the tools the client executes (clientTool).
func (req *aiSDKChatRequest) turn(clientTool func(string) bool) (chatTurn, *apiError) {
	if ae := checkThreadID("id", req.ID); ae != nil {
		return chatTurn{}, ae
	}
	switch req.Trigger {
	case "", "submit-message":
	case "regenerate-message":
		return chatTurn{}, invalid("trigger regenerate-message is not supported: a turn's run is kept as it ran; send the question again as a new message")
	default:
		return chatTurn{}, invalid("trigger %q is not one of submit-message, regenerate-message", req.Trigger)
	}
	if len(req.Messages) == 0 {
		return chatTurn{}, invalid("messages is empty: a chat starts with a user message")
	}
	t := chatTurn{thread: req.ID, agent: req.Agent, model: req.Model, metadata: req.Metadata}
	for i, m := range req.Messages {
		if !t.add(m.Role, m.text()) {
			return chatTurn{}, invalid("messages[%d].role is %q, want user, assistant or system", i, m.Role)
		}
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "user" {
		if t.user == "" {
			return chatTurn{}, invalid("the last message is the user's and has no text part")
		}
		return t, nil
	}
	for j, p := range last.Parts {
		if a, ok := p.clientAnswer(clientTool); ok {
			t.answers = append(t.answers, a)
			continue
		}
		if p.State != "approval-responded" || p.Approval == nil {
			continue
		}
		callID, ok := splitApprovalID(p.Approval.ID)
		if !ok || callID != p.ToolCallID || p.Approval.Approved == nil {
			return chatTurn{}, invalid("messages[%d].parts[%d]: approval %q of tool call %q is not an answer to an approval request stepwise sent",
				len(req.Messages)-1, j, p.Approval.ID, p.ToolCallID)
		}
		t.answers = append(t.answers, chatAnswer{
			decisionID: approvalDecisionID(p.Approval.ID), callID: callID, resume: *p.Approval.Approved, reason: p.Approval.Reason,
		})
	}
	if len(t.answers) == 0 {
		return chatTurn{}, invalid("the last message is the assistant's and answers no approval request and adds no output of a frontend tool's call: send a user message, the approval responses, or the tool outputs")
	}
	return t, nil
}

// aiSDKResume serves GET /v1/ai-sdk/chat/{id}/stream: the chat's latest
// turn, replayed from its start and followed until it ends or waits; 204
// for a chat with no turn, and for another tenant's chat alike (the AI
// SDK's resume reads 204 as nothing to resume and any other refusal as an
// error; the same answer tells nobody the chat exists).
func (s *Server) aiSDKResume(w http.ResponseWriter, r *http.Request) {
	thread := r.PathValue("id")
	if ae := checkThreadID("the chat id", thread); ae != nil {
		writeError(w, ae)
		return
	}
	head, err := s.cfg.Store.ThreadHead(r.Context(), thread)
	runID := store.ThreadRunID(thread, head)
	var run pipeline.Run
	if err == nil && head > 0 {
		run, err = s.threadRun(r, r.Context(), runID)
	}
	switch {
	case errors.Is(err, errNotYours), err == nil && head == 0:
		w.WriteHeader(http.StatusNoContent)
	case err != nil:
		s.fail(w, r, "chat "+thread, err)
	default:
		s.serveUIStream(w, r, chatStream{run: run})
	}
}

// serveUIStream answers with cs as a UI message stream.
func (s *Server) serveUIStream(w http.ResponseWriter, r *http.Request, cs chatStream) {
	release, ok := s.acquireStream(w, r)
	if !ok {
		return
	}
	defer release()
	w.Header().Set(aiSDKStreamHeader, "v1")
	rc, ok := s.startSSE(w, r, cs.run.ID)
	if !ok {
		return
	}
	es := &eventStream{w: w, rc: rc, timeout: s.cfg.StreamWriteTimeout}
	sink := uiStream{es: es, clientCalls: newClientCalls(s.cfg.ClientTools)}
	err := es.data(uiChunk{"type": "start", "messageId": cs.run.ID})
	if err == nil {
		err = s.streamTurn(r.Context(), es, cs, sink)
	}
	s.streamFailed(r.Context(), cs.run.ID, err)
}

// uiChunk is one chunk of the UI message stream.
type uiChunk map[string]any

// uiStream writes a run's chat as UI message stream chunks. Tools are
// dynamic (the client has no static definitions of stepwise's). A call of
// a tool the client executes (clientCalls) is the client's to run: it is
// not provider-executed, and its parking asks for no approval (the part
// stays input-available until addToolOutput); every other call is
// provider-executed, so the SDK's onToolCall and
// lastAssistantMessageIsCompleteWithToolCalls leave it alone.
type uiStream struct {
	es          *eventStream
	clientCalls clientCalls
}

func (u uiStream) stepStart(int) error { return u.es.data(uiChunk{"type": "start-step"}) }
func (u uiStream) stepEnd(int) error   { return u.es.data(uiChunk{"type": "finish-step"}) }

func (u uiStream) textStart(id string) error {
	return u.es.data(uiChunk{"type": "text-start", "id": id})
}

func (u uiStream) textDelta(id, delta string) error {
	return u.es.data(uiChunk{"type": "text-delta", "id": id, "delta": delta})
}

func (u uiStream) textEnd(id string) error { return u.es.data(uiChunk{"type": "text-end", "id": id}) }

func (u uiStream) toolInput(callID, tool string, args json.RawMessage) error {
	chunk := uiChunk{"type": "tool-input-available", "toolCallId": callID, "toolName": tool,
		"input": jsonOr(args, "{}"), "dynamic": true}
	if !u.clientCalls.see(callID, tool) {
		chunk["providerExecuted"] = true
	}
	return u.es.data(chunk)
}

func (u uiStream) approvalRequest(approvalID, callID string, _ pipeline.Parking) error {
	if u.clientCalls.has(callID) {
		return nil
	}
	return u.es.data(uiChunk{"type": "tool-approval-request", "approvalId": approvalID, "toolCallId": callID})
}

func (u uiStream) toolOutput(callID string, result json.RawMessage) error {
	return u.es.data(uiChunk{"type": "tool-output-available", "toolCallId": callID,
		"output": jsonOr(result, "null"), "dynamic": true})
}

func (u uiStream) toolError(callID, msg string) error {
	return u.es.data(uiChunk{"type": "tool-output-error", "toolCallId": callID,
		"errorText": orRaw(msg, "the tool call failed"), "dynamic": true})
}

func (u uiStream) toolDenied(callID, _ string) error {
	return u.es.data(uiChunk{"type": "tool-output-denied", "toolCallId": callID})
}

// finish ends the message: the run's end (or its wait for approvals) as
// the finish reason, the run's id and termination as message metadata.
func (u uiStream) finish(t pipeline.Termination) error {
	reason := "other"
	switch t.Reason {
	case pipeline.ReasonNaturalEnd, pipeline.ReasonBehaviorRequested:
		reason = "stop"
	case pipeline.ReasonSuspended:
		reason = "tool-calls"
	case pipeline.ReasonError:
		reason = "error"
		if err := u.es.data(uiChunk{"type": "error", "errorText": orRaw(t.Detail, "the run failed")}); err != nil {
			return err
		}
	}
	err := u.es.data(uiChunk{"type": "finish", "finishReason": reason, "messageMetadata": t})
	if err == nil {
		_, err = io.WriteString(u.es.w, "data: [DONE]\n\n")
	}
	return err
}

// jsonOr is raw, or def when raw is empty.
func jsonOr(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(def)
	}
	return raw
}
