package gateway_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/topics"
)

func userMsg(text string) map[string]any {
	return map[string]any{"id": "u-" + text, "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}
}

func chatBody(id string, msgs ...map[string]any) map[string]any {
	return map[string]any{"id": id, "trigger": "submit-message", "agent": "assistant", "messages": msgs}
}

// openChat posts a chat request and reads the stream's first chunk (the
// start) with the given key ("" for none); the stream is then dropped.
func (h *harness) openChat(body map[string]any, key string) (status int, header http.Header, first string) {
	h.t.Helper()
	return h.openStream("/v1/ai-sdk/chat", body, key)
}

// openStream posts body to a streaming route (path, with its query) with
// the given key ("" for none) and reads the stream's first line, or for a
// status other than 200 the whole answer; the stream is then dropped.
func (h *harness) openStream(path string, body map[string]any, key string) (status int, header http.Header, first string) {
	h.t.Helper()
	b, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url+path, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		refusal, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(refusal)
	}
	line, _ := bufio.NewReader(res.Body).ReadString('\n')
	return res.StatusCode, res.Header, strings.TrimSpace(line)
}

// Whatever a chat request gets wrong is a 4xx that says what, and creates
// nothing.
func TestAISDKChat_refuses_bad_requests(t *testing.T) {
	h := newHarness(t)
	approvalsAnswered := map[string]any{"id": "a1", "role": "assistant", "parts": []any{map[string]any{
		"type": "dynamic-tool", "toolCallId": "call_1", "state": "approval-responded",
		"approval": map[string]any{"id": "forged", "approved": true}}}}
	cases := []struct {
		name    string
		body    any
		status  int
		mention string
	}{
		{"not JSON", `{"id":`, 400, "invalid chat request"},
		{"no id", map[string]any{"messages": []any{userMsg("hi")}}, 400, "id is missing"},
		{"an id that cannot name runs", chatBody("a/b", userMsg("hi")), 400, "outside [A-Za-z0-9._:-]"},
		{"regenerate", map[string]any{"id": "c", "trigger": "regenerate-message", "messages": []any{userMsg("hi")}}, 400, "regenerate-message is not supported"},
		{"an unknown trigger", map[string]any{"id": "c", "trigger": "go", "messages": []any{userMsg("hi")}}, 400, `trigger "go"`},
		{"no messages", chatBody("c"), 400, "messages is empty"},
		{"an unknown role", chatBody("c", map[string]any{"role": "tool", "parts": []any{}}), 400, `messages[0].role is "tool"`},
		{"a user message without text", chatBody("c", map[string]any{"role": "user", "parts": []any{}}), 400, "has no text part"},
		{"an assistant message that answers nothing", chatBody("c", userMsg("hi"), map[string]any{"role": "assistant", "parts": []any{}}), 400, "answers no approval request"},
		{"a forged approval", chatBody("c", userMsg("hi"), approvalsAnswered), 400, `approval "forged"`},
		{"no agent", map[string]any{"id": "c", "messages": []any{userMsg("hi")}}, 400, "agent is missing"},
		{"an unknown agent", map[string]any{"id": "c", "agent": "nobody", "messages": []any{userMsg("hi")}}, 400, `agent "nobody" is not configured`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.post("/v1/ai-sdk/chat", c.body).wantError(t, c.status, gateway.CodeInvalidRequest, c.mention)
		})
	}
	h.do(http.MethodPost, "/v1/ai-sdk/chat", "text/plain", []byte(`{}`)).wantError(t, http.StatusUnsupportedMediaType, gateway.CodeUnsupportedMediaType)
	if s0, other := h.steps.count("c"); s0+other != 0 {
		t.Fatalf("a refused request queued steps: %d", s0+other)
	}
	if res := h.get("/v1/ai-sdk/chat/nothing-here/stream"); res.status != http.StatusNoContent {
		t.Fatalf("resume of an unknown chat: %d %s", res.status, res.body)
	}
}

// A chat's first message creates the run named by the chat id and streams
// it; the same request again streams the same run; the next user message
// waits for the turn before it to end; approval answers become decisions
// (one per answer, whatever the retries) and need decisions:write.
func TestAISDKChat_turns_and_answers(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) {
		c.Keys = []gateway.Key{
			{Name: "ui", SHA256: sha256.Sum256([]byte("secret-ui")), Scopes: []gateway.Scope{gateway.ScopeRunsWrite, gateway.ScopeRunsRead, gateway.ScopeDecisionsWrite}},
			{Name: "reader", SHA256: sha256.Sum256([]byte("secret-reader")), Scopes: []gateway.Scope{gateway.ScopeRunsWrite, gateway.ScopeRunsRead}},
		}
	})
	status, header, first := h.openChat(chatBody("c1", userMsg("hi")), "secret-ui")
	if status != http.StatusOK || header.Get("x-vercel-ai-ui-message-stream") != "v1" || header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, header %v", status, header)
	}
	if first != `data: {"messageId":"c1","type":"start"}` {
		t.Fatalf("first chunk %q", first)
	}
	run, err := h.store.GetRun(context.Background(), "c1")
	if err != nil || run.Agent != "assistant" || run.Tenant == "" {
		t.Fatalf("run c1: %+v, %v", run, err)
	}
	h.steps.waitCount(t, "c1", 1)
	if _, _, again := h.openChat(chatBody("c1", userMsg("hi")), "secret-ui"); again != first {
		t.Fatalf("the same request again: %q", again)
	}
	h.steps.waitCount(t, "c1", 1)

	next := chatBody("c1", userMsg("hi"), map[string]any{"role": "assistant", "parts": []any{}}, userMsg("more"))
	b, _ := json.Marshal(next)
	h.do(http.MethodPost, "/v1/ai-sdk/chat", "application/json", b, "Authorization", "Bearer secret-ui").
		wantError(t, http.StatusConflict, gateway.CodeConflict, "turn 1 of chat c1 (run c1) is still created")

	answer := chatBody("c1", userMsg("hi"), map[string]any{"role": "assistant", "parts": []any{map[string]any{
		"type": "dynamic-tool", "toolCallId": "call_0_0", "state": "approval-responded",
		"approval": map[string]any{"id": "call_0_0@1700000000000-3", "approved": false, "reason": "not now"}}}})
	if status, _, _ := h.openChat(answer, "secret-reader"); status != http.StatusForbidden {
		t.Fatalf("an answer without decisions:write: %d", status)
	}
	for range 2 {
		if status, _, _ := h.openChat(answer, "secret-ui"); status != http.StatusOK {
			t.Fatalf("answer: %d", status)
		}
	}
	for _, d := range h.decisions.waitFor(t, "c1", 2) {
		if d.DecisionID != "approval:call_0_0@1700000000000-3" || d.CallID != "call_0_0" || d.Action != topics.ActionCancel || d.Reason != "not now" || d.DecidedBy != "ui" {
			t.Fatalf("decision %+v", d)
		}
	}

	// Once turn 1 has ended, the next user message is turn 2: its input is
	// turn 1's conversation and the new message.
	if _, err := h.store.FinishRun(context.Background(), "c1", pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if status, _, first := h.openChat(next, "secret-ui"); status != http.StatusOK || first != `data: {"messageId":"c1~2","type":"start"}` {
		t.Fatalf("turn 2: %d %q", status, first)
	}
	msgs, err := h.store.Messages(context.Background(), "c1~2")
	if err != nil || len(msgs) != 2 || msgs[0].Content != "hi" || msgs[1].Content != "more" {
		t.Fatalf("turn 2's input: %+v, %v", msgs, err)
	}
	if head, err := h.store.ThreadHead(context.Background(), "c1"); err != nil || head != 2 {
		t.Fatalf("head of c1: %d, %v", head, err)
	}
}

// RunAgentInput's mistakes are 4xx that say what, and create nothing.
func TestAGUIRun_refuses_bad_input(t *testing.T) {
	h := newHarness(t)
	user := map[string]any{"id": "m1", "role": "user", "content": "hi"}
	cases := []struct {
		name    string
		body    any
		mention string
	}{
		{"not JSON", `[`, "invalid RunAgentInput"},
		{"no threadId", map[string]any{"runId": "r", "messages": []any{user}}, "threadId is missing"},
		{"no runId", map[string]any{"threadId": "t", "messages": []any{user}}, "runId is missing"},
		{"no user message", map[string]any{"threadId": "t", "runId": "r", "messages": []any{}}, "no user message"},
		{"an unknown role", map[string]any{"threadId": "t", "runId": "r", "messages": []any{map[string]any{"role": "robot"}}}, `messages[0].role is "robot"`},
		{"a forged interrupt", map[string]any{"threadId": "t", "runId": "r", "messages": []any{user},
			"resume": []any{map[string]any{"interruptId": "x", "status": "resolved"}}}, `interruptId "x"`},
		{"an unknown status", map[string]any{"threadId": "t", "runId": "r", "messages": []any{user},
			"resume": []any{map[string]any{"interruptId": "c@1-0", "status": "maybe"}}}, `status is "maybe"`},
		{"no agent", map[string]any{"threadId": "t", "runId": "r", "messages": []any{user}}, "agent is missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.post("/v1/ag-ui/run", c.body).wantError(t, http.StatusBadRequest, gateway.CodeInvalidRequest, c.mention)
		})
	}
	if _, err := h.store.GetRun(context.Background(), "t"); err == nil {
		t.Fatal("a refused input created a run")
	}
}
