package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/topics"
)

// argsHash is the hash of args as a parked call carries it.
func argsHash(t *testing.T, args string) string {
	t.Helper()
	h, err := pipeline.ArgsHash(json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// wantNoDecisionSince fails when anything reached the decisions topic
// since before (a count from h.pub.count). Publishing is synchronous in the
// handler, so this holds as soon as the answer is read.
func (h *harness) wantNoDecisionSince(t *testing.T, before int) {
	t.Helper()
	if got := h.pub.count(h.names.Decisions()); got != before {
		t.Errorf("%d decisions were published, want none", got-before)
	}
}

func TestDecision_is_published_keyed_by_the_path_run_with_a_generated_id(t *testing.T) {
	h := newHarness(t)
	run := h.createRun(`{"agent": "assistant", "input": "refund order 7"}`).RunID
	hash := argsHash(t, `{"amount":12.5}`)

	res := h.post("/v1/runs/"+run+"/decisions", `{
		"call_id": "c-1", "action": "resume",
		"payload": {"approved": true,  "note": "ok"},
		"args_hash": "`+hash+`", "decided_by": "alice", "reason": "looks fine"}`)
	var out gateway.DecisionResponse
	res.want(t, http.StatusAccepted, &out)
	if _, err := uuid.Parse(out.DecisionID); err != nil {
		t.Errorf("generated decision_id %q is not a uuid: %v", out.DecisionID, err)
	}
	if out.RunID != run || out.CallID != "c-1" || out.Status != "accepted" {
		t.Errorf("answer = %+v, want run %s, call c-1, accepted", out, run)
	}
	var raw map[string]any
	_ = json.Unmarshal(res.body, &raw)
	for _, k := range []string{"decision_id", "run_id", "call_id", "status"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("answer lacks %q: %s", k, res.body)
		}
	}

	got := h.decisions.waitFor(t, run, 1)[0]
	want := topics.Decision{
		Header: topics.Header{V: topics.SchemaVersion, RunID: run}, DecisionID: out.DecisionID,
		CallID: "c-1", Action: topics.ActionResume, Payload: json.RawMessage(`{"approved":true,"note":"ok"}`),
		ArgsHash: hash, DecidedBy: "alice", Reason: "looks fine",
	}
	if got.Header != want.Header || got.DecisionID != want.DecisionID || got.CallID != want.CallID ||
		got.Action != want.Action || string(got.Payload) != string(want.Payload) || got.ArgsHash != want.ArgsHash ||
		got.DecidedBy != want.DecidedBy || got.Reason != want.Reason {
		t.Errorf("published %+v (payload %s), want %+v (payload %s)", got, got.Payload, want, want.Payload)
	}
}

func TestDecision_keeps_an_explicit_decision_id_and_a_repeat_publishes_it_again(t *testing.T) {
	h := newHarness(t)
	run := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID

	// A body run_id equal to the path's is fine; the minimal decision has
	// no payload, hash, author or reason.
	body := `{"decision_id": "ticket-4711/approve#1", "run_id": "` + run + `", "call_id": "c-2", "action": "cancel"}`
	for range 2 {
		var out gateway.DecisionResponse
		h.post("/v1/runs/"+run+"/decisions", body).want(t, http.StatusAccepted, &out)
		if out.DecisionID != "ticket-4711/approve#1" {
			t.Errorf("decision_id %q, want the one given", out.DecisionID)
		}
	}
	for _, d := range h.decisions.waitFor(t, run, 2) {
		if d.DecisionID != "ticket-4711/approve#1" || d.Action != topics.ActionCancel || d.CallID != "c-2" {
			t.Errorf("published %+v, want the given id, cancel of c-2", d)
		}
		if d.Payload != nil || d.ArgsHash != "" || d.DecidedBy != "" || d.Reason != "" {
			t.Errorf("published %+v, want no payload, hash, author or reason", d)
		}
	}
}

// The gateway does not judge the call: an unknown call, or a run that is
// done, is the step worker's to reject (with an event in the run's log).
func TestDecision_is_accepted_whatever_the_state_of_the_call(t *testing.T) {
	h := newHarness(t)
	run := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	if _, err := h.store.FinishRun(context.Background(), run, pipeline.Termination{Reason: pipeline.ReasonCancelled}, time.Now()); err != nil {
		t.Fatal(err)
	}
	h.post("/v1/runs/"+run+"/decisions", `{"call_id": "no-such-call", "action": "resume"}`).
		want(t, http.StatusAccepted, nil)
	h.decisions.waitFor(t, run, 1)
}

func TestDecision_with_another_run_id_in_the_body_is_refused(t *testing.T) {
	h := newHarness(t)
	run := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	before := h.pub.count(h.names.Decisions())
	h.post("/v1/runs/"+run+"/decisions", `{"run_id": "r-other", "call_id": "c-1", "action": "resume"}`).
		wantError(t, http.StatusBadRequest, "invalid_request", `run_id "r-other" differs`, run)
	h.wantNoDecisionSince(t, before)
}

func TestDecision_for_an_unknown_run_is_a_404(t *testing.T) {
	h := newHarness(t)
	before := h.pub.count(h.names.Decisions())
	h.post("/v1/runs/nope/decisions", `{"call_id": "c-1", "action": "resume"}`).
		wantError(t, http.StatusNotFound, "not_found", "nope")
	h.wantNoDecisionSince(t, before)
}

func TestDecision_reports_every_validation_problem_at_once(t *testing.T) {
	h := newHarness(t)
	run := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	before := h.pub.count(h.names.Decisions())
	body := h.post("/v1/runs/"+run+"/decisions", `{
		"decision_id": "has space",
		"run_id": "someone-else",
		"action": "approve",
		"args_hash": "abc",
		"decided_by": 7,
		"reason": ["no"],
		"colour": "blue",
		"approved": true
	}`).wantError(t, http.StatusBadRequest, "invalid_request",
		`unknown field "approved"`,
		`unknown field "colour"`,
		`decision_id "has space" holds white space`,
		`run_id "someone-else" differs`,
		`call_id is missing`,
		`action "approve" is not "resume" or "cancel"`,
		`args_hash "abc" is not 64 lowercase hex digits`,
		`decided_by is a number, want a string`,
		`reason is an array, want a string`,
	)
	if len(body.Error.Details) != 9 {
		t.Errorf("details has %d problems, want 9: %q", len(body.Error.Details), body.Error.Details)
	}
	h.wantNoDecisionSince(t, before)
}

func TestDecision_refuses_each_kind_of_bad_request_with_a_reason(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) { c.MaxDecisionBytes = 1024 })
	run := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	path := "/v1/runs/" + run + "/decisions"
	before := h.pub.count(h.names.Decisions())
	for _, tc := range []struct {
		name, body string
		mentions   []string
	}{
		{"empty body", ``, []string{"the body is empty"}},
		{"an array", `[{"call_id": "c-1", "action": "resume"}]`, []string{"the body is an array"}},
		{"malformed JSON", `{"call_id": "c-1", "action": }`, []string{"malformed JSON at offset"}},
		{"trailing data", `{"call_id": "c-1", "action": "resume"} {}`, []string{"unexpected data after the JSON value"}},
		{"no action", `{"call_id": "c-1"}`, []string{"action is missing"}},
		{"cancel_run", `{"call_id": "c-1", "action": "cancel_run"}`, []string{"/cancel"}},
		{"call_id not a string", `{"call_id": 1, "action": "resume"}`, []string{"call_id is a number"}},
		{"an upper-case args_hash", `{"call_id": "c-1", "action": "resume", "args_hash": "` + strings.Repeat("A", 64) + `"}`, []string{"64 lowercase hex digits"}},
		{"decision_id too long", `{"decision_id": "` + strings.Repeat("d", gateway.MaxDecisionIDLength+1) + `", "call_id": "c-1", "action": "resume"}`, []string{"at most 256"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.post(path, tc.body).wantError(t, http.StatusBadRequest, "invalid_request", tc.mentions...)
		})
	}
	big := `{"call_id": "c-1", "action": "resume", "payload": "` + strings.Repeat("x", 2000) + `"}`
	h.post(path, big).wantError(t, http.StatusRequestEntityTooLarge, "payload_too_large", "1024 bytes")
	h.do(http.MethodPost, path, "text/csv", []byte("c-1,resume")).
		wantError(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	h.wantNoDecisionSince(t, before)

	// Null reads as absent: a null decision_id gets one chosen.
	var out gateway.DecisionResponse
	h.post(path, `{"decision_id": null, "call_id": "c-1", "action": "resume", "payload": null}`).want(t, http.StatusAccepted, &out)
	if out.DecisionID == "" {
		t.Errorf("no decision_id chosen for a null one")
	}
	if d := h.decisions.waitFor(t, run, 1)[0]; d.Payload != nil {
		t.Errorf("payload %s published for a null one, want none", d.Payload)
	}
}

func TestDecision_a_failed_publish_answers_503_and_the_retry_with_its_id_publishes(t *testing.T) {
	h := newHarness(t)
	run := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	h.pub.failing.Store(true)
	body := h.post("/v1/runs/"+run+"/decisions", `{"call_id": "c-1", "action": "resume"}`).
		wantError(t, http.StatusServiceUnavailable, "unavailable", "retry")
	if body.DecisionID == "" || body.RunID != run {
		t.Fatalf("the 503 names decision %q of run %q, want a decision_id and run %s", body.DecisionID, body.RunID, run)
	}

	h.pub.failing.Store(false)
	var out gateway.DecisionResponse
	h.post("/v1/runs/"+run+"/decisions", `{"decision_id": "`+body.DecisionID+`", "call_id": "c-1", "action": "resume"}`).
		want(t, http.StatusAccepted, &out)
	if out.DecisionID != body.DecisionID {
		t.Errorf("retry answered decision_id %q, want %q", out.DecisionID, body.DecisionID)
	}
	if d := h.decisions.waitFor(t, run, 1)[0]; d.DecisionID != body.DecisionID {
		t.Errorf("published decision_id %q, want %q", d.DecisionID, body.DecisionID)
	}
}

func TestCancel_publishes_cancel_run_with_a_generated_id(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name, contentType, body string
		decidedBy, reason       string
	}{
		{"no body", "", ``, "api", ""},
		{"an empty object", "application/json", `{}`, "api", ""},
		{"a reason and an author", "application/json", `{"reason": "customer left", "decided_by": "ops:bob"}`, "ops:bob", "customer left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
			res := h.do(http.MethodPost, "/v1/runs/"+run+"/cancel", tc.contentType, []byte(tc.body))
			var out gateway.CancelResponse
			res.want(t, http.StatusAccepted, &out)
			if out.RunID != run || out.Status != "accepted" {
				t.Errorf("answer = %+v, want run %s accepted", out, run)
			}
			if _, err := uuid.Parse(out.DecisionID); err != nil {
				t.Errorf("decision_id %q is not a uuid: %v", out.DecisionID, err)
			}
			d := h.decisions.waitFor(t, run, 1)[0]
			if d.Action != topics.ActionCancelRun || d.DecisionID != out.DecisionID || d.CallID != "" ||
				d.DecidedBy != tc.decidedBy || d.Reason != tc.reason {
				t.Errorf("published %+v, want cancel_run %s by %q because %q", d, out.DecisionID, tc.decidedBy, tc.reason)
			}
		})
	}
}

func TestCancel_of_a_done_run_is_a_conflict(t *testing.T) {
	h := newHarness(t)
	run := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	if _, err := h.store.FinishRun(context.Background(), run, pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}, time.Now()); err != nil {
		t.Fatal(err)
	}
	before := h.pub.count(h.names.Decisions())
	h.post("/v1/runs/"+run+"/cancel", `{}`).wantError(t, http.StatusConflict, "conflict", "already done", "natural_end")
	h.wantNoDecisionSince(t, before)
}

func TestCancel_refuses_an_unknown_run_and_a_bad_body(t *testing.T) {
	h := newHarness(t)
	before := h.pub.count(h.names.Decisions())
	h.post("/v1/runs/nope/cancel", ``).wantError(t, http.StatusNotFound, "not_found", "nope")

	run := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	body := h.post("/v1/runs/"+run+"/cancel", `{"reason": 5, "why": "x"}`).
		wantError(t, http.StatusBadRequest, "invalid_request", `unknown field "why"`, "reason is a number")
	if len(body.Error.Details) != 2 {
		t.Errorf("details = %q, want both problems", body.Error.Details)
	}
	h.post("/v1/runs/"+run+"/cancel", `"now"`).wantError(t, http.StatusBadRequest, "invalid_request", "the body is a string")
	h.wantNoDecisionSince(t, before)
}

func TestCancel_a_failed_publish_answers_503(t *testing.T) {
	h := newHarness(t)
	run := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	h.pub.failing.Store(true)
	body := h.post("/v1/runs/"+run+"/cancel", ``).wantError(t, http.StatusServiceUnavailable, "unavailable", run, "retry")
	if body.RunID != run {
		t.Errorf("the 503 names run %q, want %s", body.RunID, run)
	}

	h.pub.failing.Store(false)
	h.post("/v1/runs/"+run+"/cancel", ``).want(t, http.StatusAccepted, nil)
	h.decisions.waitFor(t, run, 1)
}
