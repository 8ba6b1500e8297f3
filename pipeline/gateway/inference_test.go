package gateway_test

import (
	"net/http"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// batchHarness is a gateway whose agent helper has a model in batch mode
// and whose agent assistant has not.
func batchHarness(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, func(c *gateway.Config) { c.BatchAgents = []string{"helper"} })
}

// inferenceOf is the inference mode GET /v1/runs/{id} shows for run.
func (h *harness) inferenceOf(run string) pipeline.InferenceMode {
	h.t.Helper()
	var v gateway.RunView
	h.get("/v1/runs/"+run).want(h.t, http.StatusOK, &v)
	return v.Inference
}

// A run may ask for batch inference when its agent's model has a batch
// mode, and for live inference always; the mode is kept with the run,
// shown in its view, and part of its request (the same run_id asking for
// another mode is another request). Batch for an agent without a batch
// mode, or a mode that does not exist, is refused with what is wrong.
func TestCreate_a_run_asks_for_an_inference_mode_its_agents_model_allows(t *testing.T) {
	h := batchHarness(t)
	h.createRun(`{"run_id": "r-batch", "agent": "helper", "input": "hi", "inference": "batch"}`)
	h.createRun(`{"run_id": "r-live", "agent": "assistant", "input": "hi", "inference": "live"}`)
	h.createRun(`{"run_id": "r-default", "agent": "helper", "input": "hi", "inference": null}`)
	for run, want := range map[string]pipeline.InferenceMode{"r-batch": pipeline.InferenceBatch, "r-live": pipeline.InferenceLive, "r-default": ""} {
		if got := h.inferenceOf(run); got != want {
			t.Errorf("run %s shows inference %q; want %q", run, got, want)
		}
	}
	h.post("/v1/runs", `{"run_id": "r-batch", "agent": "helper", "input": "hi", "inference": "live"}`).
		wantError(t, http.StatusConflict, "conflict", "r-batch")
	h.post("/v1/runs", `{"agent": "assistant", "input": "hi", "inference": "batch"}`).
		wantError(t, http.StatusBadRequest, "invalid_request", `agent "assistant"'s model has no batch mode`)
	h.post("/v1/runs", `{"agent": "helper", "input": "hi", "inference": "cheap"}`).
		wantError(t, http.StatusBadRequest, "invalid_request", `inference mode "cheap": want "batch" or "live"`)
}

// A batch of runs may ask for an inference mode for its items that name
// none; an item's own mode stands, and an item whose agent cannot infer in
// batch refuses the batch.
func TestCreateBatch_asks_for_an_inference_mode_for_the_items_naming_none(t *testing.T) {
	h := batchHarness(t)
	var out gateway.BatchResponse
	h.post("/v1/runs/batch?inference=batch", `[{"run_id": "b-1", "agent": "helper", "input": "hi"},
		{"run_id": "b-2", "agent": "helper", "input": "hi", "inference": "live"}]`).want(t, http.StatusCreated, &out)
	if got := h.inferenceOf("b-1"); got != pipeline.InferenceBatch {
		t.Errorf("b-1 shows inference %q; want the batch's", got)
	}
	if got := h.inferenceOf("b-2"); got != pipeline.InferenceLive {
		t.Errorf("b-2 shows inference %q; want its own", got)
	}
	h.post("/v1/runs/batch?inference=batch", `[{"agent": "helper", "input": "hi"}, {"agent": "assistant", "input": "hi"}]`).
		wantError(t, http.StatusBadRequest, "invalid_request", `item 1: inference "batch": agent "assistant"'s model has no batch mode`)
	h.post("/v1/runs/batch?inference=soon", `[{"agent": "helper", "input": "hi"}]`).
		wantError(t, http.StatusBadRequest, "invalid_request", `inference mode "soon"`)
}

// A decision through the API is a person's: the run of a batch-mode agent
// infers live from then on. A run of an agent without a batch mode is
// left as it was.
func TestDecision_through_the_API_makes_a_batch_mode_run_infer_live(t *testing.T) {
	h := batchHarness(t)
	h.createRun(`{"run_id": "r-bulk", "agent": "helper", "input": "hi"}`)
	h.createRun(`{"run_id": "r-plain", "agent": "assistant", "input": "hi"}`)
	for _, run := range []string{"r-bulk", "r-plain"} {
		h.post("/v1/runs/"+run+"/decisions", `{"call_id": "c-1", "action": "resume"}`).want(t, http.StatusAccepted, nil)
	}
	if got := h.inferenceOf("r-bulk"); got != pipeline.InferenceLive {
		t.Errorf("the batch-mode run shows inference %q after a person's decision; want live", got)
	}
	if got := h.inferenceOf("r-plain"); got != "" {
		t.Errorf("the other run shows inference %q; want none", got)
	}
}
