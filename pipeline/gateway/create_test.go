package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

func TestCreate_a_run_is_stored_and_its_first_step_is_published(t *testing.T) {
	h := newHarness(t)

	created := h.createRun(`{"agent": "assistant", "input": "What is 2+2?", "metadata": {"team": "a", "n": 1}}`)
	if _, err := uuid.Parse(created.RunID); err != nil {
		t.Errorf("generated run_id %q is not a uuid: %v", created.RunID, err)
	}
	if created.Status != pipeline.RunCreated {
		t.Errorf("status %q, want created", created.Status)
	}
	h.steps.waitCount(t, created.RunID, 1)

	var run gateway.RunView
	h.get("/v1/runs/"+created.RunID).want(t, http.StatusOK, &run)
	if run.RunID != created.RunID || run.Agent != "assistant" || run.Status != pipeline.RunCreated || run.Step != 0 {
		t.Errorf("run = %+v, want %s of assistant, created at step 0", run.RunSummary, created.RunID)
	}
	if run.ToolCalls == nil || len(run.ToolCalls) != 0 {
		t.Errorf("tool_calls = %#v, want an empty list", run.ToolCalls)
	}
	if string(run.Metadata) != `{"team":"a","n":1}` {
		t.Errorf("metadata = %s, want it as given", run.Metadata)
	}
	if run.Termination != nil {
		t.Errorf("termination = %+v, want none", run.Termination)
	}
	if run.CreatedAt.IsZero() || run.UpdatedAt.IsZero() {
		t.Errorf("created_at %v, updated_at %v: want both set", run.CreatedAt, run.UpdatedAt)
	}

	var msgs gateway.MessageList
	h.get("/v1/runs/"+created.RunID+"/messages").want(t, http.StatusOK, &msgs)
	want := []pipeline.Message{{Role: pipeline.RoleUser, Content: "What is 2+2?"}}
	if len(msgs.Messages) != 1 || msgs.Messages[0].Role != want[0].Role || msgs.Messages[0].Content != want[0].Content {
		t.Errorf("messages = %+v, want %+v", msgs.Messages, want)
	}
}

func TestCreate_schedules_the_first_sweep_after_SweepAfter(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	h := newHarness(t, func(c *gateway.Config) {
		c.Now = func() time.Time { return now }
		c.SweepAfter = time.Minute
	})
	created := h.createRun(`{"agent": "assistant", "input": "hi"}`)

	ctx := context.Background()
	due, err := h.store.DueRuns(ctx, now.Add(59*time.Second), 10, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 0 {
		t.Errorf("due before SweepAfter: %v, want none", due)
	}
	due, err = h.store.DueRuns(ctx, now.Add(61*time.Second), 10, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 || due[0] != created.RunID {
		t.Errorf("due after SweepAfter: %v, want [%s]", due, created.RunID)
	}
}

func TestCreate_the_same_request_again_is_an_idempotent_replay(t *testing.T) {
	h := newHarness(t)
	first := `{"run_id": "order-42:a.b_C", "agent": "assistant",
		"input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Refund order 42"}],
		"model": {"provider": "script", "turns": [{"text": "ok"}]},
		"metadata": {"b": 2, "a": 1}}`
	// The same request, other key order and spacing.
	again := `{"metadata":{"a":1,"b":2},"model":{"turns":[{"text":"ok"}],"provider":"script"},"agent":"assistant","run_id":"order-42:a.b_C",` +
		`"input":[{"content":"Be brief.","role":"system"},{"role":"user","content":"Refund order 42"}]}`

	if got := h.createRun(first); got.RunID != "order-42:a.b_C" {
		t.Fatalf("run_id %q, want the one given", got.RunID)
	}
	var replay gateway.CreateRunResponse
	h.post("/v1/runs", again).want(t, http.StatusOK, &replay)
	if replay.RunID != "order-42:a.b_C" || replay.Status != pipeline.RunCreated {
		t.Errorf("replay = %+v, want the same run, still created", replay)
	}
	// Still created at step 0: the replay publishes StepRequested again.
	h.steps.waitCount(t, "order-42:a.b_C", 2)

	// Once the run has moved on, a replay reports its status and publishes nothing.
	if _, err := h.store.FinishRun(context.Background(), "order-42:a.b_C",
		pipeline.Termination{Reason: pipeline.ReasonCancelled}, time.Now()); err != nil {
		t.Fatal(err)
	}
	h.post("/v1/runs", first).want(t, http.StatusOK, &replay)
	if replay.Status != pipeline.RunDone {
		t.Errorf("replay of a finished run says %q, want done", replay.Status)
	}
	h.steps.waitCount(t, "order-42:a.b_C", 2)
}

func TestCreate_text_input_replays_as_the_same_single_user_message(t *testing.T) {
	h := newHarness(t)
	h.createRun(`{"run_id": "r-text", "agent": "assistant", "input": "hello"}`)
	h.post("/v1/runs", `{"run_id": "r-text", "agent": "assistant", "input": [{"role": "user", "content": "hello"}]}`).
		want(t, http.StatusOK, nil)
}

func TestCreate_the_same_run_id_with_another_request_is_a_conflict(t *testing.T) {
	h := newHarness(t)
	h.createRun(`{"run_id": "r-1", "agent": "assistant", "input": "one"}`)

	for name, body := range map[string]string{
		"other input":    `{"run_id": "r-1", "agent": "assistant", "input": "two"}`,
		"other agent":    `{"run_id": "r-1", "agent": "helper", "input": "one"}`,
		"other metadata": `{"run_id": "r-1", "agent": "assistant", "input": "one", "metadata": {"x": 1}}`,
		"other model":    `{"run_id": "r-1", "agent": "assistant", "input": "one", "model": {"provider": "script"}}`,
		"other start_at": `{"run_id": "r-1", "agent": "assistant", "input": "one", "start_at": "2030-01-01T00:00:00Z"}`,
	} {
		t.Run(name, func(t *testing.T) {
			h.post("/v1/runs", body).wantError(t, http.StatusConflict, "conflict", "r-1")
		})
	}
	var msgs gateway.MessageList
	h.get("/v1/runs/r-1/messages").want(t, http.StatusOK, &msgs)
	if len(msgs.Messages) != 1 || msgs.Messages[0].Content != "one" {
		t.Errorf("messages = %+v, want the first request's", msgs.Messages)
	}
	h.steps.waitCount(t, "r-1", 1)
}

func TestCreate_reports_every_validation_problem_at_once(t *testing.T) {
	h := newHarness(t)
	res := h.post("/v1/runs", `{
		"run_id": "bad{id}",
		"agent": "nobody",
		"colour": "blue",
		"input": [
			{"role": "robot", "content": "beep"},
			{"role": "tool", "content": "42", "tool_call_id": "c-9"},
			5,
			{"role": "user", "content": "hi", "extra": true}
		],
		"model": {"provider": "openai"},
		"metadata": [1, 2]
	}`)
	body := res.wantError(t, http.StatusBadRequest, "invalid_request",
		`unknown field "colour"`,
		`run_id "bad{id}"`,
		`agent "nobody" is not configured`,
		`input[0]: role "robot"`,
		`input[1]: tool_call_id "c-9" answers no tool call`,
		`input[2] is a number`,
		`input[3]: unknown field "extra"`,
		`model: provider must be "script"`,
		`metadata is an array, want an object`,
	)
	if len(body.Error.Details) != 9 {
		t.Errorf("details has %d problems, want 9: %q", len(body.Error.Details), body.Error.Details)
	}
	var list gateway.RunList
	h.get("/v1/runs").want(t, http.StatusOK, &list)
	if len(list.Runs) != 0 {
		t.Errorf("an invalid request created runs: %+v", list.Runs)
	}
}

func TestCreate_refuses_each_kind_of_bad_request_with_a_reason(t *testing.T) {
	h := newHarness(t)
	long := strings.Repeat("x", gateway.MaxRunIDLength+1)
	for _, tc := range []struct {
		name, body string
		mentions   []string
	}{
		{"empty body", ``, []string{"empty"}},
		{"malformed JSON", `{"agent": "assistant", "input": }`, []string{"malformed JSON at offset 32:", "invalid character '}'"}},
		{"truncated JSON", `{"agent": "assistant"`, []string{"malformed JSON"}},
		{"trailing data", `{"agent": "assistant", "input": "hi"} {}`, []string{"unexpected data after the JSON value at offset 38"}},
		{"malformed JSON on line 3", "{\n  \"agent\": \"assistant\",\n  \"input\" \"hi\"\n}", []string{"line 3, column 11"}},
		{"an array", `[{"agent": "assistant", "input": "hi"}]`, []string{"/v1/runs/batch"}},
		{"a string", `"hi"`, []string{"the body is a string"}},
		{"no agent", `{"input": "hi"}`, []string{"agent is missing"}},
		{"agent not a string", `{"agent": 7, "input": "hi"}`, []string{"agent is a number, want a string"}},
		{"no input", `{"agent": "assistant"}`, []string{"input is missing"}},
		{"start_at not a time", `{"agent": "assistant", "input": "hi", "start_at": "tomorrow"}`, []string{`start_at "tomorrow" is not an RFC 3339 time`}},
		{"null input", `{"agent": "assistant", "input": null}`, []string{"input is missing"}},
		{"empty text", `{"agent": "assistant", "input": ""}`, []string{"input is empty text"}},
		{"empty messages", `{"agent": "assistant", "input": []}`, []string{"input is an empty array"}},
		{"input an object", `{"agent": "assistant", "input": {"role": "user"}}`, []string{"input is an object"}},
		{"missing role", `{"agent": "assistant", "input": [{"content": "hi"}]}`, []string{"input[0]: role is missing"}},
		{"content not a string", `{"agent": "assistant", "input": [{"role": "user", "content": 5}]}`, []string{`input[0]: field "content" is a JSON number, want a string`}},
		{"tool calls on a user message", `{"agent": "assistant", "input": [{"role": "user", "content": "x", "tool_calls": [{"id": "c", "name": "t"}]}]}`, []string{"only allowed on assistant messages"}},
		{"tool message without id", `{"agent": "assistant", "input": [{"role": "tool", "content": "x"}]}`, []string{"needs tool_call_id"}},
		{"run_id too long", `{"run_id": "` + long + `", "agent": "assistant", "input": "hi"}`, []string{"at most 128"}},
		{"run_id with a slash", `{"run_id": "a/b", "agent": "assistant", "input": "hi"}`, []string{`run_id "a/b" holds characters outside`}},
		{"run_id of dots", `{"run_id": "..", "agent": "assistant", "input": "hi"}`, []string{`run_id ".." cannot be addressed`}},
		{"model not an object", `{"agent": "assistant", "input": "hi", "model": "gpt-4o"}`, []string{"model is a string, want an object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.post("/v1/runs", tc.body).wantError(t, http.StatusBadRequest, "invalid_request", tc.mentions...)
		})
	}
}

func TestCreate_accepts_a_conversation_with_tool_calls_and_their_results(t *testing.T) {
	h := newHarness(t)
	created := h.createRun(`{"agent": "assistant", "input": [
		{"role": "user", "content": "Look up order 7"},
		{"role": "assistant", "content": "", "tool_calls": [{"id": "c-1", "name": "lookup_order", "arguments": {"id": 7}}]},
		{"role": "tool", "content": "{\"status\":\"shipped\"}", "tool_call_id": "c-1"},
		{"role": "user", "content": "Thanks, and order 8?"}
	]}`)
	var msgs gateway.MessageList
	h.get("/v1/runs/"+created.RunID+"/messages").want(t, http.StatusOK, &msgs)
	if len(msgs.Messages) != 4 || msgs.Messages[1].ToolCalls[0].Name != "lookup_order" ||
		string(msgs.Messages[1].ToolCalls[0].Arguments) != `{"id":7}` || msgs.Messages[2].ToolCallID != "c-1" {
		t.Errorf("messages = %+v, want the four given", msgs.Messages)
	}
}

func TestCreate_a_body_over_MaxBodyBytes_is_refused_with_413(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) { c.MaxBodyBytes = 1024 })
	big := `{"agent": "assistant", "input": "` + strings.Repeat("a", 2000) + `"}`
	h.post("/v1/runs", big).wantError(t, http.StatusRequestEntityTooLarge, "payload_too_large", "1024 bytes")
	h.post("/v1/runs/batch", "["+big+"]").wantError(t, http.StatusRequestEntityTooLarge, "payload_too_large")
}

// Only JSON changes state. A body without a Content-Type, or with one a
// browser sends to another origin without a preflight (text/plain, a form),
// is refused: read as JSON, it would let any web page act through a
// visitor's browser.
func TestCreate_a_body_that_is_not_declared_JSON_is_refused_with_415(t *testing.T) {
	h := newHarness(t)
	body := []byte(`{"agent": "assistant", "input": "hi"}`)
	for _, ct := range []string{"text/csv", "", "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		for _, path := range []string{"/v1/runs", "/v1/runs/batch"} {
			h.do(http.MethodPost, path, ct, body).
				wantError(t, http.StatusUnsupportedMediaType, "unsupported_media_type", "application/json")
		}
	}
	h.do(http.MethodPost, "/v1/runs", "application/json; charset=utf-8", body).want(t, http.StatusCreated, nil)
	h.do(http.MethodPost, "/v1/runs", "application/vnd.stepwise+json", body).want(t, http.StatusCreated, nil)
	h.do(http.MethodPost, "/v1/runs/batch", "application/x-ndjson", body).want(t, http.StatusCreated, nil)
}

func TestCreate_a_failed_publish_answers_503_and_the_retry_publishes(t *testing.T) {
	h := newHarness(t)
	h.pub.failing.Store(true)
	body := h.post("/v1/runs", `{"agent": "assistant", "input": "hi"}`).
		wantError(t, http.StatusServiceUnavailable, "unavailable", "retry")
	if body.RunID == "" {
		t.Fatalf("the 503 does not name the stored run: %+v", body)
	}
	// The run exists, waiting for its first step.
	var run gateway.RunView
	h.get("/v1/runs/"+body.RunID).want(t, http.StatusOK, &run)
	if run.Status != pipeline.RunCreated {
		t.Errorf("status %q, want created", run.Status)
	}

	h.pub.failing.Store(false)
	h.post("/v1/runs", `{"run_id": "`+body.RunID+`", "agent": "assistant", "input": "hi"}`).want(t, http.StatusOK, nil)
	h.steps.waitCount(t, body.RunID, 1)
}

func TestCreate_a_store_that_is_down_answers_503(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) { c.Store = store.New(unreachableRedis(t)) })
	body := h.post("/v1/runs", `{"agent": "assistant", "input": "hi"}`).wantError(t, http.StatusServiceUnavailable, "unavailable")
	if body.RunID == "" {
		t.Errorf("the 503 does not name the run_id to retry with: %+v", body)
	}
}

func TestNew_refuses_a_config_without_store_publisher_or_agents(t *testing.T) {
	_, err := gateway.New(gateway.Config{MaxBodyBytes: -1})
	if err == nil {
		t.Fatal("New accepted an empty config")
	}
	for _, want := range []string{"Store is missing", "Publisher is missing", "Agents is missing", "MaxBodyBytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
}

// A run whose start_at is ahead is stored, created, and its first step is
// not published: the sweeper requests it at start_at. Over POST /v1/runs
// and as a batch's item alike; a start_at in the past starts it at once.
func TestCreate_a_run_with_start_at_ahead_is_stored_and_not_started(t *testing.T) {
	h := newHarness(t)
	later := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	h.createRun(`{"run_id": "later", "agent": "assistant", "input": "hi", "start_at": "` + later + `"}`)
	h.post("/v1/runs/batch", `[{"run_id": "later-item", "agent": "assistant", "input": "hi", "start_at": "`+later+`"}]`).want(t, http.StatusCreated, nil)
	h.createRun(`{"run_id": "past", "agent": "assistant", "input": "hi", "start_at": "2020-01-01T00:00:00Z"}`)
	h.steps.waitCount(t, "past", 1)
	for _, id := range []string{"later", "later-item"} {
		var v gateway.RunView
		h.get("/v1/runs/"+id).want(t, http.StatusOK, &v)
		if v.Status != pipeline.RunCreated || v.StartAt.Format(time.RFC3339) != later {
			t.Errorf("run %s: %s, start_at %s; want created, start_at %s", id, v.Status, v.StartAt, later)
		}
		if n, _ := h.steps.count(id); n != 0 {
			t.Errorf("run %s: step 0 published %d times before its start_at", id, n)
		}
	}
}
