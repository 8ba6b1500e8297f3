package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

func TestBatch_a_JSON_array_creates_every_run_in_order(t *testing.T) {
	h := newHarness(t)
	var items []string
	for i := range 200 {
		if i%2 == 0 {
			items = append(items, fmt.Sprintf(`{"run_id": "b-%03d", "agent": "assistant", "input": "item %d"}`, i, i))
		} else {
			items = append(items, fmt.Sprintf(`{"agent": "helper", "input": [{"role": "user", "content": "item %d"}]}`, i))
		}
	}
	var out gateway.BatchResponse
	h.post("/v1/runs/batch", "[\n"+strings.Join(items, ",\n")+"\n]").want(t, http.StatusCreated, &out)
	if len(out.RunIDs) != 200 {
		t.Fatalf("%d run ids, want 200", len(out.RunIDs))
	}
	seen := map[string]bool{}
	for i, id := range out.RunIDs {
		if i%2 == 0 && id != fmt.Sprintf("b-%03d", i) {
			t.Errorf("run_ids[%d] = %q, want the id given", i, id)
		}
		if seen[id] {
			t.Errorf("run id %q appears twice", id)
		}
		seen[id] = true
	}
	for i, id := range out.RunIDs {
		h.steps.waitCount(t, id, 1)
		if i%17 == 0 { // a sample: the runs hold what their items said
			var msgs gateway.MessageList
			h.get("/v1/runs/"+id+"/messages").want(t, http.StatusOK, &msgs)
			if want := fmt.Sprintf("item %d", i); len(msgs.Messages) != 1 || msgs.Messages[0].Content != want {
				t.Errorf("run %s says %+v, want %q", id, msgs.Messages, want)
			}
		}
	}
}

func TestBatch_JSON_Lines_create_every_run_and_skip_blank_lines(t *testing.T) {
	h := newHarness(t)
	body := "{\"run_id\": \"l-1\", \"agent\": \"assistant\", \"input\": \"one\"}\r\n\n" +
		"  {\"run_id\": \"l-2\", \"agent\": \"helper\", \"input\": \"two\"}\n"
	for _, ct := range []string{"application/x-ndjson", "application/jsonl"} {
		t.Run(ct, func(t *testing.T) {
			var out gateway.BatchResponse
			h.do(http.MethodPost, "/v1/runs/batch", ct, []byte(body)).want(t, http.StatusCreated, &out)
			if strings.Join(out.RunIDs, ",") != "l-1,l-2" {
				t.Errorf("run_ids = %v, want [l-1 l-2]", out.RunIDs)
			}
		})
	}
	// The second post was a replay of the same runs: both published twice.
	h.steps.waitCount(t, "l-1", 2)
	h.steps.waitCount(t, "l-2", 2)
}

func TestBatch_with_an_invalid_item_names_it_and_creates_nothing(t *testing.T) {
	h := newHarness(t)
	t.Run("array", func(t *testing.T) {
		body := h.post("/v1/runs/batch", `[
			{"run_id": "ok-1", "agent": "assistant", "input": "fine"},
			{"run_id": "bad-1", "agent": "nobody", "input": ""},
			{"run_id": "ok-1", "agent": "assistant", "input": "fine"},
			"not an object"
		]`).wantError(t, http.StatusBadRequest, "invalid_request",
			"3 of 4 items are invalid",
			`item 1: agent "nobody" is not configured`,
			"item 1: input is empty text",
			`item 2: run_id "ok-1" repeats item 0's`,
			"item 3: the item is a string")
		if len(body.Error.Details) != 4 {
			t.Errorf("details = %q, want 4 problems", body.Error.Details)
		}
	})
	t.Run("JSON Lines", func(t *testing.T) {
		h.do(http.MethodPost, "/v1/runs/batch", "application/x-ndjson", []byte(
			`{"run_id": "ok-2", "agent": "assistant", "input": "fine"}`+"\n\n"+
				`{"run_id": "bad-2", "agent": "assistant", "input": }`+"\n",
		)).wantError(t, http.StatusBadRequest, "invalid_request", "item 1 (line 3): malformed JSON at offset")
	})

	var list gateway.RunList
	h.get("/v1/runs").want(t, http.StatusOK, &list)
	if len(list.Runs) != 0 {
		t.Errorf("an invalid batch created runs: %+v", list.Runs)
	}
	for _, id := range []string{"ok-1", "ok-2"} {
		if n, _ := h.steps.count(id); n != 0 {
			t.Errorf("an invalid batch published StepRequested for %s", id)
		}
	}
}

func TestBatch_refuses_bodies_that_are_not_batches(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ name, ct, body, mention string }{
		{"empty", "application/json", "  ", "empty"},
		{"empty array", "application/json", "[]", "empty array"},
		{"malformed array", "application/json", `[{"agent": "assistant"},, {}]`, "malformed JSON at offset 24:"},
		{"data after the array", "application/json", `[{"agent": "assistant", "input": "x"}] 5`, "after the array"},
		{"a number", "application/json", `42`, "the body is a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.do(http.MethodPost, "/v1/runs/batch", tc.ct, []byte(tc.body)).
				wantError(t, http.StatusBadRequest, "invalid_request", tc.mention)
		})
	}
	h.do(http.MethodPost, "/v1/runs/batch", "text/csv", []byte("agent,input\n")).
		wantError(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
}

func TestBatch_refuses_budgets_that_are_not_amounts(t *testing.T) {
	h := newHarness(t)
	body := `[{"agent": "assistant", "input": "x"}]`
	for query, mention := range map[string]string{
		"token_budget=0":        `token_budget "0": want a positive number of tokens`,
		"token_budget=1.5":      `token_budget "1.5"`,
		"cost_budget=-1":        `cost_budget "-1": want a positive amount of USD`,
		"cost_budget=abc":       `cost_budget "abc"`,
		"cost_budget=NaN":       `cost_budget "NaN"`,
		"cost_budget=Inf":       `cost_budget "Inf"`,
		"cost_budget=0.0000001": `at least 0.000001`,
	} {
		h.post("/v1/runs/batch?"+query, body).wantError(t, http.StatusBadRequest, "invalid_request", mention)
	}
}

func TestBatch_over_MaxBatchItems_is_refused_with_413(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) { c.MaxBatchItems = 3 })
	item := `{"agent": "assistant", "input": "x"}`
	h.post("/v1/runs/batch", "["+strings.Repeat(item+",", 3)+item+"]").
		wantError(t, http.StatusRequestEntityTooLarge, "payload_too_large", "more than 3 items")
	h.do(http.MethodPost, "/v1/runs/batch", "application/x-ndjson", []byte(strings.Repeat(item+"\n", 4))).
		wantError(t, http.StatusRequestEntityTooLarge, "payload_too_large", "more than 3 items")
	h.post("/v1/runs/batch", "["+strings.Repeat(item+",", 2)+item+"]").want(t, http.StatusCreated, nil)
}

func TestBatch_a_conflicting_item_answers_409_and_the_others_are_created(t *testing.T) {
	h := newHarness(t)
	h.createRun(`{"run_id": "taken", "agent": "assistant", "input": "first"}`)
	body := h.post("/v1/runs/batch", `[
		{"run_id": "fresh", "agent": "assistant", "input": "x"},
		{"run_id": "taken", "agent": "assistant", "input": "second"}
	]`).wantError(t, http.StatusConflict, "conflict", "1 of 2 runs failed", "item 1 (run_id taken)")
	if strings.Join(body.RunIDs, ",") != "fresh,taken" {
		t.Errorf("run_ids = %v, want every id of the batch", body.RunIDs)
	}
	h.get("/v1/runs/fresh").want(t, http.StatusOK, nil)
	h.steps.waitCount(t, "fresh", 1)
}

func TestBatch_a_failed_publish_answers_503_with_every_run_id_and_a_resend_publishes(t *testing.T) {
	h := newHarness(t)
	h.pub.failing.Store(true)
	body := h.post("/v1/runs/batch", `[{"agent": "assistant", "input": "a"}, {"agent": "assistant", "input": "b"}]`).
		wantError(t, http.StatusServiceUnavailable, "unavailable", "2 of 2 runs failed")
	if len(body.RunIDs) != 2 {
		t.Fatalf("run_ids = %v, want both", body.RunIDs)
	}
	h.pub.failing.Store(false)
	resend := fmt.Sprintf(`[{"run_id": %q, "agent": "assistant", "input": "a"}, {"run_id": %q, "agent": "assistant", "input": "b"}]`,
		body.RunIDs[0], body.RunIDs[1])
	h.post("/v1/runs/batch", resend).want(t, http.StatusCreated, nil)
	h.steps.waitCount(t, body.RunIDs[0], 1)
	h.steps.waitCount(t, body.RunIDs[1], 1)
}
