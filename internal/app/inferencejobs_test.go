package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/cli"
	"github.com/stepwise-run/stepwise/internal/tooling/fakebatch"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// What waits for a model's batches shows at /metrics and in `stepwise
// inference-jobs`: requests waiting in the open batch and the oldest's
// wait, then the job in flight at the provider, then, once the runs are
// done, every job ended with the provider's file and batch ids.
func TestBatchInference_metrics_and_inference_jobs_show_what_waits_and_what_the_provider_holds(t *testing.T) {
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", "test-key")
	fake := &fakebatch.Server{Answer: batchAnswer, Delay: time.Second}
	hs := httptest.NewServer(fake)
	t.Cleanup(hs.Close)
	// A batch closes when it holds the 4 runs' requests, not before.
	cfg := strings.Replace(batchConfig(hs.URL), "max_wait: 300ms, max_requests: 1000", "max_wait: 1h, max_requests: 4", 1)
	stack := connect(t, newInfra(t), parseConfig(t, cfg))
	workers(t, stack)
	base := serve(t, stack)
	t.Setenv(cli.EnvGateway, base)
	const model = `{model="openai:test-model"}`
	create := func(i int) {
		t.Helper()
		id := fmt.Sprintf("r-shown-%d", i)
		if code := httpDo(t, http.MethodPost, base+"/v1/runs", map[string]any{"run_id": id, "agent": "bulk", "input": "go"}, nil); code != http.StatusCreated {
			t.Fatalf("create %s: %d", id, code)
		}
	}
	for i := range 3 {
		create(i)
	}
	testinfra.Eventually(t, 30*time.Second, func() bool {
		return metricValue(t, base, "stepwise_inference_requests_waiting"+model) == 3 &&
			metricValue(t, base, "stepwise_inference_oldest_wait_seconds"+model) > 0
	}, func() string { return "the open batch does not show 3 requests waiting" })
	var list gateway.InferenceJobList
	if code, out, errs := stepwiseCLI(t, "inference-jobs", "--json"); code != cli.ExitOK || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("inference-jobs --json: %d %s %s", code, out, errs)
	}
	if len(list.Models) != 1 || list.Models[0].Waiting != 3 || len(list.Models[0].Jobs) != 0 {
		t.Fatalf("inference-jobs with 3 requests waiting: %+v", list)
	}

	create(3) // the batch is full: a job takes it to the provider
	submitted := `stepwise_inference_jobs{model="openai:test-model",state="submitted"}`
	testinfra.Eventually(t, 30*time.Second, func() bool { return metricValue(t, base, submitted) == 1 },
		func() string { return "no job shows submitted" })
	for i := range 4 {
		assertNaturalEnd(t, waitDone(t, base, fmt.Sprintf("r-shown-%d", i), 60*time.Second), batchSteps-1)
	}
	if w := metricValue(t, base, "stepwise_inference_requests_waiting"+model); w != 0 {
		t.Fatalf("%g requests wait once every run is done", w)
	}

	code, out, errs := stepwiseCLI(t, "inference-jobs", "--json")
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &list) != nil || len(list.Models) != 1 {
		t.Fatalf("inference-jobs --json: %d %s %s", code, out, errs)
	}
	batches := map[string]bool{}
	for _, b := range fake.Batches() {
		batches[b.ID] = true
	}
	if jobs := list.Models[0].Jobs; len(jobs) != batchSteps || len(batches) != batchSteps {
		t.Fatalf("%d jobs listed, %d batches at the provider; want one a wave of steps, %d", len(jobs), len(batches), batchSteps)
	}
	for _, j := range list.Models[0].Jobs {
		if j.State != "done" || j.Requests != 4 || !batches[j.BatchID] || j.FileID == "" || j.EndedAt == nil || j.EndedAt.Before(j.ClosedAt) {
			t.Fatalf("job %+v; want done, its 4 requests answered by a batch of the provider", j)
		}
	}
	code, out, _ = stepwiseCLI(t, "inference-jobs")
	rows := map[string]int{} // model, state, requests → lines
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) >= 4 {
			rows[f[0]+" "+f[2]+" "+f[3]]++
		}
	}
	if code != cli.ExitOK || rows["openai:test-model waiting 0"] != 1 || rows["openai:test-model done 4"] != batchSteps {
		t.Fatalf("inference-jobs: %d\n%s", code, out)
	}
	t.Logf("stepwise inference-jobs:\n%s", out)
}
