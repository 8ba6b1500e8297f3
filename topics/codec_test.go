package topics_test

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/topics"
)

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Golden payloads are bytes older builds wrote (or outside producers send):
// they must keep decoding to the same values.
func TestDecode_golden_payloads_keep_decoding(t *testing.T) {
	t.Run("step requested", func(t *testing.T) {
		m, err := topics.Decode[topics.StepRequested](golden(t, "step_requested.v1.json"))
		want := topics.StepRequested{Header: topics.Header{V: 1, RunID: "r-1"}, Step: 2}
		if err != nil || !reflect.DeepEqual(m, want) {
			t.Fatalf("got %+v, %v", m, err)
		}
	})
	t.Run("tool call requested, with the arguments it no longer carries", func(t *testing.T) {
		m, err := topics.Decode[topics.ToolCallRequested](golden(t, "tool_call_requested.v1.json"))
		if err != nil || m.CallID != "c-1" || m.Tool != "echo" {
			t.Fatalf("got %+v, %v", m, err)
		}
	})
	t.Run("tool call finished", func(t *testing.T) {
		m, err := topics.Decode[topics.ToolCallFinished](golden(t, "tool_call_finished.v1.json"))
		if err != nil || m.Status != pipeline.CallSucceeded || m.CallID != "c-1" {
			t.Fatalf("got %+v, %v", m, err)
		}
	})
	t.Run("tool call finished, with the view of its step it no longer carries", func(t *testing.T) {
		m, err := topics.Decode[topics.ToolCallFinished](golden(t, "tool_call_finished_view.v1.json"))
		want := topics.ToolCallFinished{Header: topics.Header{V: 1, RunID: "r-1"}, CallID: "c-1", Status: pipeline.CallSucceeded}
		if err != nil || !reflect.DeepEqual(m, want) {
			t.Fatalf("got %+v, %v", m, err)
		}
	})
	t.Run("decision without a version, as outside producers send it", func(t *testing.T) {
		m, err := topics.Decode[topics.Decision](golden(t, "decision.v1.json"))
		if err != nil || m.Action != topics.ActionResume || m.DecidedBy != "alice" || string(m.Payload) != `{"approved":true}` {
			t.Fatalf("got %+v, %v", m, err)
		}
	})
	t.Run("run result", func(t *testing.T) {
		m, err := topics.Decode[topics.RunResult](golden(t, "run_result.v1.json"))
		if err != nil || m.Termination.Code != "max_rounds" || m.Usage.InputTokens != 10 || string(m.Metadata) != `{"order":7}` || m.BatchID != "batch-1" {
			t.Fatalf("got %+v, %v", m, err)
		}
	})
	t.Run("run requested, signed, in a batch", func(t *testing.T) {
		m, err := topics.Decode[topics.RunRequested](golden(t, "run_requested.v1.json"))
		if err != nil || m.RunID != "r-1" || m.Agent != "assistant" || string(m.Input) != `"Refund order 42"` ||
			string(m.Metadata) != `{"order":42}` || m.BatchID != "nightly-7" || m.Producer != "erp" || m.Signature != "6f2c" {
			t.Fatalf("got %+v, %v", m, err)
		}
	})
	t.Run("run request outcome", func(t *testing.T) {
		m, err := topics.Decode[topics.RunRequestOutcome](golden(t, "run_request_outcome.v1.json"))
		if err != nil || m.Outcome != topics.RequestRejected || m.Code != "invalid_request" || m.BatchID != "nightly-7" || !strings.Contains(m.Reason, "nobody") {
			t.Fatalf("got %+v, %v", m, err)
		}
	})
	t.Run("approval requested", func(t *testing.T) {
		m, err := topics.Decode[topics.ApprovalRequested](golden(t, "approval_requested.v1.json"))
		parked := time.Date(2026, 11, 28, 9, 0, 0, 123e6, time.UTC)
		if err != nil || m.CallID != "c-1" || m.Step != 2 || string(m.Arguments) != `{"to":"a@example.com"}` || m.ResumeMode != pipeline.ResumeReplay ||
			m.Deadline != topics.Time(parked.Add(time.Hour-123*time.Millisecond)) || m.OnTimeout != topics.ActionCancel ||
			m.ParkedAt != topics.Time(parked) || m.Tenant != "acme" || string(m.Metadata) != `{"order":7}` || m.ArgumentsOmitted {
			t.Fatalf("got %+v, %v", m, err)
		}
	})
	t.Run("decision outcome", func(t *testing.T) {
		m, err := topics.Decode[topics.DecisionOutcome](golden(t, "decision_outcome.v1.json"))
		if err != nil || m.Outcome != topics.OutcomeRejected || m.DecisionID != "d-1" || m.CallID != "c-1" {
			t.Fatalf("got %+v, %v", m, err)
		}
	})
}

func TestEncode_round_trips_and_writes_the_schema_version(t *testing.T) {
	in := topics.ToolCallRequested{Header: topics.Header{RunID: "r-9"}, Step: 1, CallID: "c", Tool: "sleep", Siblings: 3}
	b, err := topics.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"v":1`) {
		t.Fatalf("encoded %s has no schema version", b)
	}
	out, err := topics.Decode[topics.ToolCallRequested](b)
	in.V = topics.SchemaVersion
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %+v, %v; want %+v", out, err, in)
	}
}

func TestDecode_refuses_bad_payloads_with_the_reason(t *testing.T) {
	cases := []struct{ name, payload, want string }{
		{"not JSON", `hello`, "not a JSON object"},
		{"empty", ``, "not a JSON object"},
		{"an array", `[1]`, "not a JSON object"},
		{"wrong type", `{"run_id":"r","step":"two"}`, "cannot unmarshal"},
		{"no run id", `{"step":1}`, "run_id is missing"},
		{"negative step", `{"run_id":"r","step":-1}`, "step is -1"},
		{"newer schema", `{"v":2,"run_id":"r","step":0}`, "schema version 2 is newer than 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := topics.Decode[topics.StepRequested]([]byte(c.payload))
			if !errors.Is(err, topics.ErrMalformed) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want ErrMalformed saying %q", err, c.want)
			}
			if !topics.IsPermanent(err) {
				t.Fatalf("a malformed message must be permanent")
			}
		})
	}
}

func TestDecode_a_tool_call_request_refuses_a_negative_sibling_count(t *testing.T) {
	_, err := topics.Decode[topics.ToolCallRequested]([]byte(`{"run_id":"r","step":0,"call_id":"c","tool":"echo","siblings":-1}`))
	if !errors.Is(err, topics.ErrMalformed) || !strings.Contains(err.Error(), "siblings is -1") {
		t.Fatalf("error = %v, want ErrMalformed saying siblings is -1", err)
	}
}

// segmentio's decoder has no nesting bound; Decode keeps encoding/json's.
func TestDecode_refuses_json_nested_deeper_than_encoding_json_takes(t *testing.T) {
	for _, tc := range []struct {
		open, close string
		depth       int
		ok          bool
	}{{"[", "]", 9999, true}, {"[", "]", 10000, false}, {`{"a":`, "}", 10000, false}, {"[", "]", 500000, false}} {
		// The payload object itself is one level: depth more inside it.
		payload := []byte(`{"run_id":"r","decision_id":"d","call_id":"c","action":"resume","payload":` +
			strings.Repeat(tc.open, tc.depth) + "1" + strings.Repeat(tc.close, tc.depth) + `,"s":"[[\"{"}`)
		_, err := topics.Decode[topics.Decision](payload)
		var std topics.Decision
		stdErr := json.Unmarshal(payload, &std)
		if (err == nil) != tc.ok || (stdErr == nil) != tc.ok {
			t.Fatalf("%d deep %q: Decode %v, encoding/json %v; want ok %v", tc.depth, tc.open, err, stdErr, tc.ok)
		}
		if !tc.ok && (!errors.Is(err, topics.ErrMalformed) || !strings.Contains(err.Error(), "nested more than 10000 deep")) {
			t.Fatalf("%d deep: %v, want ErrMalformed saying how deep", tc.depth, err)
		}
	}
}

func TestDecode_a_decision_reports_every_problem_at_once(t *testing.T) {
	_, err := topics.Decode[topics.Decision]([]byte(`{"run_id":"r","action":"approve"}`))
	for _, want := range []string{"decision_id is missing", `action "approve" is not`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}

func TestDecode_an_approval_request_reports_every_problem_at_once(t *testing.T) {
	_, err := topics.Decode[topics.ApprovalRequested]([]byte(`{"run_id":"r","resume_mode":"later","on_timeout":"wait","deadline":"soon"}`))
	for _, want := range []string{"call_id is missing", "tool is missing", "args_hash is missing", "ticket is missing",
		"agent is missing", `resume_mode "later"`, `on_timeout "wait"`, "parked_at is missing", `deadline "soon"`} {
		if !errors.Is(err, topics.ErrMalformed) || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}

func TestNames_under_a_prefix(t *testing.T) {
	n := topics.NewNames("acme.")
	if n.RunSteps() != "acme.run-steps" || n.ToolCalls("") != "acme.tool-calls.default" || n.ToolCalls("payments") != "acme.tool-calls.payments" {
		t.Fatalf("names: %s %s %s", n.RunSteps(), n.ToolCalls(""), n.ToolCalls("payments"))
	}
	if q, ok := n.Queue("acme.tool-calls.payments"); !ok || q != "payments" {
		t.Fatalf("Queue = %q, %v", q, ok)
	}
	if topics.NewNames("").DeadLetter() != "stepwise.dead-letter" {
		t.Fatalf("default prefix not applied")
	}
}

func TestNewMessage_keys_by_run(t *testing.T) {
	msg, err := topics.NewMessage(topics.StepRequested{Header: topics.Header{RunID: "r-7"}, Step: 0})
	if err != nil || msg.Metadata.Get(topics.MetadataRunID) != "r-7" {
		t.Fatalf("metadata = %v, %v", msg.Metadata, err)
	}
	if !topics.IsPermanent(topics.Permanent(errors.New("x"))) || topics.IsPermanent(errors.New("x")) || topics.Permanent(nil) != nil {
		t.Fatal("Permanent classification is off")
	}
}

func TestDecode_a_call_decision_needs_a_call_and_a_run_cancel_does_not(t *testing.T) {
	if _, err := topics.Decode[topics.Decision]([]byte(`{"decision_id":"d","run_id":"r","action":"resume"}`)); err == nil || !strings.Contains(err.Error(), "call_id is missing") {
		t.Fatalf("resume without call_id: %v", err)
	}
	if _, err := topics.Decode[topics.Decision]([]byte(`{"decision_id":"d","run_id":"r","action":"cancel_run"}`)); err != nil {
		t.Fatalf("cancel_run: %v", err)
	}
}

// A decision comes from other systems' producers: text that readers take in
// different ways is malformed, saying where.
func TestDecode_a_decision_with_a_key_twice_or_bytes_not_UTF_8_is_malformed(t *testing.T) {
	for _, c := range []struct{ name, payload, want string }{
		{"a key twice", `{"decision_id":"d","run_id":"r","call_id":"c","action":"resume","action":"cancel"}`, `key "action" appears twice in an object`},
		{"a key twice, spelled with an escape", `{"decision_id":"d","run_id":"r","call_id":"c","action":"resume","payload":{"a":1,"\u0061":2}}`, `key "a" appears twice`},
		{"not UTF-8", "{\"decision_id\":\"d\",\"run_id\":\"r\",\"call_id\":\"c\",\"action\":\"resume\",\"reason\":\"caf\xe9\"}", "byte 0xe9 does not start a character, at offset 77"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := topics.Decode[topics.Decision]([]byte(c.payload))
			if !errors.Is(err, topics.ErrMalformed) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want ErrMalformed saying %q", err, c.want)
			}
		})
	}
	if _, err := topics.Decode[topics.Decision]([]byte(`{"decision_id":"d","run_id":"r","call_id":"c","action":"resume","payload":[{"a":1},{"a":2}]}`)); err != nil {
		t.Fatalf("the same key in two objects is fine: %v", err)
	}
}

// A run request comes from other systems too: it needs its run_id (the
// idempotency key) and is held to CheckText; the body's own checks are the
// gateway's, as over HTTP.
func TestDecode_a_run_request_needs_a_run_id_and_plain_text(t *testing.T) {
	for name, c := range map[string]struct{ payload, want string }{
		"no run_id":   {`{"agent":"assistant","input":"hi"}`, "run_id is missing"},
		"a key twice": {`{"run_id":"r","agent":"a","agent":"b","input":"hi"}`, `key "agent" appears twice`},
		"not JSON":    {`run me`, "not a JSON object"},
	} {
		if _, err := topics.Decode[topics.RunRequested]([]byte(c.payload)); !errors.Is(err, topics.ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error = %v, want ErrMalformed saying %q", name, err, c.want)
		}
	}
	if _, err := topics.Decode[topics.RunRequested]([]byte(`{"run_id":"r","input":5}`)); err != nil {
		t.Fatalf("a body the gateway refuses is still a request: %v", err)
	}
}

func TestDecode_a_rejected_run_request_outcome_needs_its_code(t *testing.T) {
	if _, err := topics.Decode[topics.RunRequestOutcome]([]byte(`{"run_id":"r","outcome":"rejected"}`)); err == nil || !strings.Contains(err.Error(), "code is missing") {
		t.Fatalf("rejected without a code: %v", err)
	}
	if _, err := topics.Decode[topics.RunRequestOutcome]([]byte(`{"run_id":"r","outcome":"queued"}`)); err == nil || !strings.Contains(err.Error(), `outcome "queued" is not`) {
		t.Fatalf("unknown outcome: %v", err)
	}
}
