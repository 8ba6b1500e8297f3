package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/fakebatch"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// batchSteps is how many steps a run of batchAnswer has: an echo call at
// each step but the last, which answers.
const batchSteps = 3

// batchAnswer answers a batch's chat completion request as a model that
// calls echo until batchSteps-1 tool results are in, then answers.
var batchAnswer = fakebatch.CallsThenAnswers(batchSteps-1, "echo")

// batchConfig is an agent whose model is in batch mode on the fake at url.
func batchConfig(url string) string { return batchConfigWith(url, "", nil) }

// runBatched creates n runs of the bulk agent on a stack whose model's
// Batch API is h, waits for each to end, checks each ended as
// batchAnswer leads it and returns them.
func runBatched(t *testing.T, h http.Handler, n int) {
	t.Helper()
	stack, base := batchStack(t, h, batchConfig)
	for i := range n {
		id := fmt.Sprintf("r-batched-%d", i)
		if code := httpDo(t, http.MethodPost, base+"/v1/runs", map[string]any{"run_id": id, "agent": "bulk", "input": "go"}, nil); code != http.StatusCreated {
			t.Fatalf("create %s: %d", id, code)
		}
	}
	for i := range n {
		id := fmt.Sprintf("r-batched-%d", i)
		assertAnsweredOnce(t, base, id)
		if parked := eventsOf(runEvents(t, stack, id), pipeline.EventStepAwaitingInference); len(parked) != batchSteps {
			t.Fatalf("run %s parked %d times; want once a step: %v", id, len(parked), parked)
		}
	}
}

// assertAnsweredOnce waits for run id to end and checks it ended as
// batchAnswer leads it, each step's answer taken once: the last answer,
// and the usage of one answer a step.
func assertAnsweredOnce(t *testing.T, base, id string) {
	t.Helper()
	v := waitDone(t, base, id, 60*time.Second)
	assertNaturalEnd(t, v, batchSteps-1)
	msgs := getMessages(t, base, id)
	if last := msgs[len(msgs)-1]; last.Content != fmt.Sprintf("done after %d", batchSteps-1) {
		t.Fatalf("run %s ended with %+v; want the batch's last answer", id, last)
	}
	if v.Usage.InputTokens != 10*batchSteps || v.Usage.OutputTokens != 5*batchSteps {
		t.Fatalf("run %s used %+v; want each step's answer counted once", id, v.Usage)
	}
}

// Runs of an agent in batch mode step through the Batch API: each step's
// request waits in its model's open batch, a few jobs a wave of steps
// carry them all, no custom_id goes twice, and every run ends with the
// answers the batches gave.
func TestBatchInference_runs_of_three_steps_finish_through_a_few_batch_jobs(t *testing.T) {
	fake := &fakebatch.Server{Answer: batchAnswer}
	const runs = 50
	runBatched(t, fake, runs)
	if rep := fake.Repeated(); len(rep) != 0 {
		t.Fatalf("custom_ids sent twice: %v", rep)
	}
	jobs := fake.Batches()
	requests := 0
	for _, b := range jobs {
		requests += b.RequestCounts.Total
	}
	t.Logf("%d runs of %d steps: %d batch jobs, %d requests", runs, batchSteps, len(jobs), requests)
	if requests != runs*batchSteps {
		t.Fatalf("%d requests in the batches; want %d, one a step", requests, runs*batchSteps)
	}
	if len(jobs) > 3*batchSteps {
		t.Fatalf("%d batch jobs for %d waves of steps; want a few a wave", len(jobs), batchSteps)
	}
}

// createdUnrecorded is a Batch API whose first batch creation is carried
// out but answered 500, as if the batcher died between the provider's
// create and its own record of it.
type createdUnrecorded struct {
	*fakebatch.Server
	lost atomic.Bool
}

func (c *createdUnrecorded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/batches") || c.lost.Swap(true) {
		c.Server.ServeHTTP(w, r)
		return
	}
	c.Server.ServeHTTP(httptest.NewRecorder(), r)
	http.Error(w, `{"error":{"message":"lost on the way back","type":"server_error"}}`, http.StatusInternalServerError)
}

// A batch created whose creation the batcher never recorded is found by
// the job its metadata names: no second batch of the same requests is
// created, and every answer lands once.
func TestBatchInference_a_batch_created_but_not_recorded_is_found_not_created_again(t *testing.T) {
	fake := &createdUnrecorded{Server: &fakebatch.Server{Answer: batchAnswer}}
	runBatched(t, fake, 10)
	if !fake.lost.Load() {
		t.Fatal("no batch creation was lost; the test proves nothing")
	}
	if rep := fake.Repeated(); len(rep) != 0 {
		t.Fatalf("custom_ids sent twice: %v", rep)
	}
	seen := map[string]string{}
	for _, b := range fake.Batches() {
		job := b.Metadata["stepwise_job"]
		if other, ok := seen[job]; ok {
			t.Fatalf("job %s was created twice: batches %s and %s", job, other, b.ID)
		}
		seen[job] = b.ID
	}
}

// The step worker whose sweeper holds a model's batcher stops while a job
// of the model is in flight at the provider (its runs show their step
// awaiting_inference): another step worker's
// sweeper takes the batcher over once its lease runs out, finds the job
// where its record left it, and every answer lands once.
func TestBatchInference_a_batcher_that_dies_with_a_job_in_flight_is_taken_over(t *testing.T) {
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", "test-key")
	fake := &fakebatch.Server{Answer: batchAnswer, Delay: time.Second}
	hs := httptest.NewServer(fake)
	t.Cleanup(hs.Close)
	in := newInfra(t)
	cfg := parseConfig(t, batchConfig(hs.URL))
	first := connect(t, in, cfg)
	stopFirst := start(t, first.RunStepWorker)
	start(t, func(ctx context.Context) error { return first.RunToolWorker(ctx, nil) })
	base := serve(t, first)
	const runs = 10
	for i := range runs {
		id := fmt.Sprintf("r-takeover-%d", i)
		if code := httpDo(t, http.MethodPost, base+"/v1/runs", map[string]any{"run_id": id, "agent": "bulk", "input": "go"}, nil); code != http.StatusCreated {
			t.Fatalf("create %s: %d", id, code)
		}
	}
	var parked struct {
		StepState pipeline.StepState `json:"step_state"`
	}
	testinfra.Eventually(t, 30*time.Second, func() bool {
		httpDo(t, http.MethodGet, base+"/v1/runs/r-takeover-0", nil, &parked)
		return parked.StepState == pipeline.StepAwaitingInference && len(fake.Batches()) > 0
	}, func() string {
		return fmt.Sprintf("the run's step is %q, %d batches created", parked.StepState, len(fake.Batches()))
	})
	stopFirst() // its lease stays in Redis until it runs out, as a dead worker's does
	second := connect(t, in, cfg)
	start(t, second.RunStepWorker)
	for i := range runs {
		assertAnsweredOnce(t, base, fmt.Sprintf("r-takeover-%d", i))
	}
	if rep := fake.Repeated(); len(rep) != 0 {
		t.Fatalf("custom_ids sent twice: %v", rep)
	}
	if first := fake.Batches()[0]; first.Status != fakebatch.StatusCompleted {
		t.Fatalf("the job in flight at the stop is %s", first.Status)
	}
}
