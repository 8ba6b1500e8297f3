package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/cli"
	"github.com/stepwise-run/stepwise/internal/tooling/fakebatch"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// batchModelKey names the model of batchConfig's agents: its batch.
const batchModelKey = "openai:test-model"

// batchConfigWith is batchConfig with more batch settings (batch, e.g.
// ", on_error: retry") and, beside bulk, agents of the same model whose
// stop conditions stops gives by name (a YAML mapping each).
func batchConfigWith(url, batch string, stops map[string]string) string {
	model := fmt.Sprintf(`{provider: openai, name: test-model, base_url: %q, api_key_env: STEPWISE_TEST_OPENAI_KEY, max_retries: 0, stream: false,
            batch: {window: 24h, max_wait: 300ms, max_requests: 1000%s}}`, url+"/v1", batch)
	var agents strings.Builder
	for _, name := range slices.Sorted(maps.Keys(stops)) {
		fmt.Fprintf(&agents, "  %s:\n    model: %s\n    tools: [echo]\n    stop: %s\n", name, model, stops[name])
	}
	return fmt.Sprintf(`
kafka: {partitions: 4}
stepworker: {lease: 2s, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 2s}
agents:
  bulk:
    model: %s
    tools: [echo]
%s`, model, agents.String())
}

// batchStack serves h as the model's API and runs a stack of cfg
// (batchConfigWith's, on h's URL) with its workers and gateway; it
// returns the stack and the gateway's base URL.
func batchStack(t *testing.T, h http.Handler, cfg func(url string) string) (*app.Stack, string) {
	t.Helper()
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", "test-key")
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	stack := connect(t, newInfra(t), parseConfig(t, cfg(hs.URL)))
	workers(t, stack)
	return stack, serve(t, stack)
}

// batchAndLive is the fake Batch API with, beside it, the live Chat
// Completions endpoint answering as batchAnswer does. It counts the live
// requests, keeps the uploaded files, and holds uploads or downloads
// (503) while told to.
type batchAndLive struct {
	*fakebatch.Server
	live                       atomic.Int64
	holdUploads, holdDownloads atomic.Bool
	downloads                  atomic.Int64

	mu      sync.Mutex
	uploads [][]byte
	// corrupt, when set, names a run: the first output file holding an
	// answer of it serves that answer's line as text that is not JSON,
	// every time it is downloaded (corruptFile).
	corrupt, corruptFile string
}

func newBatchAndLive(answer func(string, json.RawMessage) (json.RawMessage, *fakebatch.LineError)) *batchAndLive {
	return &batchAndLive{Server: &fakebatch.Server{Answer: answer}}
}

func (f *batchAndLive) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	held := `{"error":{"message":"held by the test","type":"server_error"}}`
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		body, _ := io.ReadAll(r.Body)
		out, le := batchAnswer(fmt.Sprintf("live-%d", f.live.Add(1)), body)
		if le != nil {
			http.Error(w, le.Message, le.Status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
		return
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/files"):
		if f.holdUploads.Load() {
			http.Error(w, held, http.StatusServiceUnavailable)
			return
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.uploads = append(f.uploads, body)
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/content"):
		if f.holdDownloads.Load() {
			http.Error(w, held, http.StatusServiceUnavailable)
			return
		}
		defer f.downloads.Add(1)
		if f.corrupt != "" {
			f.serveCorrupted(w, r)
			return
		}
	}
	f.Server.ServeHTTP(w, r)
}

// serveCorrupted serves a file's content, its line answering f.corrupt
// garbled in the first file that holds one, and in each download of it.
func (f *batchAndLive) serveCorrupted(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	f.Server.ServeHTTP(rec, r)
	body, mark := rec.Body.Bytes(), []byte(`"custom_id":"`+f.corrupt+`.`)
	f.mu.Lock()
	if f.corruptFile == "" && bytes.Contains(body, mark) {
		f.corruptFile = r.URL.Path
	}
	garble := f.corruptFile == r.URL.Path
	f.mu.Unlock()
	if garble {
		lines := bytes.Split(body, []byte("\n"))
		for i, l := range lines {
			if bytes.Contains(l, mark) {
				lines[i] = []byte("{not json")
			}
		}
		body = bytes.Join(lines, []byte("\n"))
	}
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// uploaded reports whether a file uploaded held a request of run.
func (f *batchAndLive) uploaded(run string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.uploads, func(b []byte) bool { return bytes.Contains(b, []byte(`"custom_id":"`+run+`.`)) })
}

// batched is how many requests the batches that completed carried.
func (f *batchAndLive) batched() int {
	n := 0
	for _, b := range f.Batches() {
		if b.Status == fakebatch.StatusCompleted {
			n += b.RequestCounts.Total
		}
	}
	return n
}

// postRun creates a run over POST /v1/runs with body, which names it.
func postRun(t *testing.T, base string, body map[string]any) {
	t.Helper()
	if code := httpDo(t, http.MethodPost, base+"/v1/runs", body, nil); code != http.StatusCreated {
		t.Fatalf("create %v: %d", body["run_id"], code)
	}
}

// runBulk creates n runs of agent bulk, <prefix>-0 to <prefix>-<n-1>,
// and waits for each to end as batchAnswer leads it.
func runBulk(t *testing.T, base, prefix string, n int) {
	t.Helper()
	for i := range n {
		postRun(t, base, map[string]any{"run_id": fmt.Sprintf("%s-%d", prefix, i), "agent": "bulk", "input": "go"})
	}
	for i := range n {
		waitBatchedEnd(t, base, fmt.Sprintf("%s-%d", prefix, i))
	}
}

// waitBatchedEnd waits for run to end as batchAnswer leads it.
func waitBatchedEnd(t *testing.T, base, run string) {
	t.Helper()
	assertNaturalEnd(t, waitDone(t, base, run, 60*time.Second), batchSteps-1)
	if msgs := getMessages(t, base, run); msgs[len(msgs)-1].Content != fmt.Sprintf("done after %d", batchSteps-1) {
		t.Fatalf("run %s ended with %+v", run, msgs[len(msgs)-1])
	}
}

// waitStepState waits until run's current step is in state.
func waitStepState(t *testing.T, base, run string, state pipeline.StepState) {
	t.Helper()
	var v struct {
		StepState pipeline.StepState `json:"step_state"`
	}
	testinfra.Eventually(t, 30*time.Second, func() bool {
		httpDo(t, http.MethodGet, base+"/v1/runs/"+run, nil, &v)
		return v.StepState == state
	}, func() string { return fmt.Sprintf("run %s's step is %q", run, v.StepState) })
}

// A chat turn on an agent in batch mode answers at live speed: every step
// of its run infers through the live API, none waits for a batch.
func TestBatchInference_a_chat_turn_on_a_batch_mode_agent_answers_live(t *testing.T) {
	fake := newBatchAndLive(batchAnswer)
	stack, base := batchStack(t, fake, func(url string) string { return batchConfigWith(url, "", nil) })
	user := map[string]any{"id": "u1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "go"}}}
	chunks := chatResponse(t, base+"/v1/ai-sdk/chat?agent=bulk", map[string]any{"id": "chat-bulk", "messages": []any{user}})
	if f := chunksOf(chunks, "finish"); len(f) != 1 || f[0]["finishReason"] != "stop" {
		t.Fatalf("the turn did not finish: %v", f)
	}
	run := store.ThreadRunID("chat-bulk", 1)
	assertNaturalEnd(t, waitDone(t, base, run, 30*time.Second), batchSteps-1)
	if n := fake.live.Load(); n != batchSteps {
		t.Fatalf("%d live requests; want one a step, %d", n, batchSteps)
	}
	if b := fake.Batches(); len(b) != 0 || fake.uploaded(run) {
		t.Fatalf("the chat turn went through the Batch API: %d batches", len(b))
	}
	if parked := eventsOf(runEvents(t, stack, run), pipeline.EventStepAwaitingInference); len(parked) != 0 {
		t.Fatalf("the chat turn's steps parked for a batch: %v", parked)
	}
}

// A run asks for batch or live inference against its model's default
// (batch.default: live here): the one asking for batch goes through the
// Batch API, the one naming none infers live, as does the one asking for
// live.
func TestBatchInference_a_run_asks_for_batch_or_live_against_its_models_default(t *testing.T) {
	fake := newBatchAndLive(batchAnswer)
	_, base := batchStack(t, fake, func(url string) string { return batchConfigWith(url, ", default: live", nil) })
	postRun(t, base, map[string]any{"run_id": "r-asks-batch", "agent": "bulk", "input": "go", "inference": "batch"})
	postRun(t, base, map[string]any{"run_id": "r-default", "agent": "bulk", "input": "go"})
	postRun(t, base, map[string]any{"run_id": "r-asks-live", "agent": "bulk", "input": "go", "inference": "live"})
	for _, run := range []string{"r-asks-batch", "r-default", "r-asks-live"} {
		waitBatchedEnd(t, base, run)
	}
	if got := fake.batched(); got != batchSteps || !fake.uploaded("r-asks-batch") || fake.uploaded("r-default") || fake.uploaded("r-asks-live") {
		t.Fatalf("%d requests went through batches; want the %d steps of r-asks-batch alone", got, batchSteps)
	}
	if n := fake.live.Load(); n != 2*batchSteps {
		t.Fatalf("%d live requests; want the %d steps of the two others", n, 2*batchSteps)
	}
}

// A run whose deadline (its agent's stop.timeout) is nearer than the
// model's batch.live_within (by default its window, 24h) infers live: a
// batch may answer after it. One whose deadline is further goes through
// the Batch API.
func TestBatchInference_a_run_whose_deadline_is_near_infers_live(t *testing.T) {
	fake := newBatchAndLive(batchAnswer)
	_, base := batchStack(t, fake, func(url string) string {
		return batchConfigWith(url, "", map[string]string{"near": "{timeout: 1h}", "far": "{timeout: 48h}"})
	})
	postRun(t, base, map[string]any{"run_id": "r-near", "agent": "near", "input": "go"})
	postRun(t, base, map[string]any{"run_id": "r-far", "agent": "far", "input": "go"})
	waitBatchedEnd(t, base, "r-near")
	waitBatchedEnd(t, base, "r-far")
	if n := fake.live.Load(); n != batchSteps || fake.uploaded("r-near") {
		t.Fatalf("%d live requests; want r-near's %d steps", n, batchSteps)
	}
	if got := fake.batched(); got != batchSteps || !fake.uploaded("r-far") {
		t.Fatalf("%d requests through batches; want r-far's %d steps", got, batchSteps)
	}
}

// A run cancelled while its request waits in a closed job, not yet
// uploaded, is left out of the job's file; one cancelled while its job is
// at the provider has its answer ignored: it stays cancelled, nothing
// after. The other run goes on.
func TestBatchInference_a_cancelled_runs_request_is_dropped_and_its_answer_ignored(t *testing.T) {
	fake := newBatchAndLive(batchAnswer)
	stack, base := batchStack(t, fake, func(url string) string { return batchConfigWith(url, "", nil) })
	cancel := func(run string) {
		t.Helper()
		if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+run+"/cancel", map[string]any{"reason": "test"}, nil); code != http.StatusAccepted {
			t.Fatalf("cancel %s: %d", run, code)
		}
		if v := waitDone(t, base, run, 30*time.Second); v.Termination.Reason != pipeline.ReasonCancelled {
			t.Fatalf("run %s ended %+v", run, v.Termination)
		}
	}

	fake.holdUploads.Store(true)
	postRun(t, base, map[string]any{"run_id": "r-keep", "agent": "bulk", "input": "go"})
	postRun(t, base, map[string]any{"run_id": "r-cancel", "agent": "bulk", "input": "go"})
	waitStepState(t, base, "r-keep", pipeline.StepAwaitingInference)
	waitStepState(t, base, "r-cancel", pipeline.StepAwaitingInference)
	cancel("r-cancel")
	fake.holdUploads.Store(false)
	waitBatchedEnd(t, base, "r-keep")
	if fake.uploaded("r-cancel") {
		t.Fatal("the cancelled run's request was uploaded")
	}

	fake.holdDownloads.Store(true)
	batches := len(fake.Batches())
	postRun(t, base, map[string]any{"run_id": "r-late", "agent": "bulk", "input": "go"})
	testinfra.Eventually(t, 30*time.Second, func() bool { return len(fake.Batches()) > batches },
		func() string { return "no batch carries r-late's request" })
	cancel("r-late")
	before := len(getMessages(t, base, "r-late"))
	downloads := fake.downloads.Load()
	fake.holdDownloads.Store(false)
	testinfra.Eventually(t, 30*time.Second, func() bool {
		jobs, err := stack.Store.InferenceJobs(context.Background(), batchModelKey)
		return err == nil && len(jobs) == 0 && fake.downloads.Load() > downloads
	}, func() string { return "r-late's job did not end" })
	if v := getRun(t, base, "r-late"); v.Termination.Reason != pipeline.ReasonCancelled || v.Step != 0 {
		t.Fatalf("r-late after its answer: step %d, %+v", v.Step, v.Termination)
	}
	if after := len(getMessages(t, base, "r-late")); after != before {
		t.Fatalf("r-late's conversation grew from %d to %d messages after its cancel", before, after)
	}
}

// With batch.on_error: retry, an answer line that is an error sends that
// step's request again, alone, under its next attempt; a step whose every
// attempt is answered with an error fails after stepworker.max_attempts
// (3) with the provider's message.
func TestBatchInference_an_error_line_retries_that_step_alone(t *testing.T) {
	overloaded := &fakebatch.LineError{Status: http.StatusInternalServerError, Code: "server_error", Message: "overloaded"}
	fake := newBatchAndLive(func(id string, body json.RawMessage) (json.RawMessage, *fakebatch.LineError) {
		if id == "r-flaky.1.1" || strings.HasPrefix(id, "r-broken.") {
			return nil, overloaded
		}
		return batchAnswer(id, body)
	})
	_, base := batchStack(t, fake, func(url string) string { return batchConfigWith(url, ", on_error: retry", nil) })
	postRun(t, base, map[string]any{"run_id": "r-flaky", "agent": "bulk", "input": "go"})
	postRun(t, base, map[string]any{"run_id": "r-steady", "agent": "bulk", "input": "go"})
	postRun(t, base, map[string]any{"run_id": "r-broken", "agent": "bulk", "input": "go"})
	waitBatchedEnd(t, base, "r-flaky")
	waitBatchedEnd(t, base, "r-steady")
	v := waitDone(t, base, "r-broken", 60*time.Second)
	if v.Termination.Reason != pipeline.ReasonError || !strings.Contains(v.Termination.Detail, "attempt 3") || !strings.Contains(v.Termination.Detail, "overloaded") {
		t.Fatalf("r-broken ended %+v; want an error at its third attempt with the provider's message", v.Termination)
	}
	if rep := fake.Repeated(); len(rep) != 0 {
		t.Fatalf("custom_ids sent twice: %v", rep)
	}
	if got := fake.batched(); got != 2*batchSteps+1+3 {
		t.Fatalf("%d requests through batches; want r-flaky's and r-steady's steps, r-flaky's retry, r-broken's 3 attempts", got)
	}
}

// With batch.on_failure: live, the steps of a batch that failed at the
// provider infer live; their runs go on, their next steps through batches.
func TestBatchInference_a_failed_batch_falls_back_to_live_by_policy(t *testing.T) {
	fake := newBatchAndLive(batchAnswer)
	fake.Faults.FailBatches(1)
	_, base := batchStack(t, fake, func(url string) string { return batchConfigWith(url, ", on_failure: live", nil) })
	const runs = 4
	runBulk(t, base, "r-fallback", runs)
	live := int(fake.live.Load())
	if live == 0 || live+fake.batched() != runs*batchSteps {
		t.Fatalf("%d live requests and %d through completed batches; want the failed batch's live, %d in all", live, fake.batched(), runs*batchSteps)
	}
}

// An answer line the provider garbled (not JSON) is no answer: the rest
// of its file is handed to their steps, and its request goes to the next
// batch, whose answer its step takes; the job does not stay stuck on the
// file.
func TestBatchInference_a_garbled_answer_line_is_sent_again_and_the_rest_handed(t *testing.T) {
	fake := newBatchAndLive(batchAnswer)
	fake.corrupt = "r-garbled-0"
	_, base := batchStack(t, fake, func(url string) string { return batchConfigWith(url, "", nil) })
	const runs = 3
	runBulk(t, base, "r-garbled", runs)
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.corruptFile == "" {
		t.Fatal("no output file held an answer of r-garbled-0: nothing was garbled")
	}
}

// `stepwise submit --inference batch` creates the file's runs in batch
// mode on a model whose default is live; a mode that does not exist is
// refused with the gateway's message.
func TestBatchInference_stepwise_submit_asks_for_an_inference_mode(t *testing.T) {
	fake := newBatchAndLive(batchAnswer)
	_, base := batchStack(t, fake, func(url string) string { return batchConfigWith(url, ", default: live", nil) })
	t.Setenv(cli.EnvGateway, base)
	in := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := os.WriteFile(in, []byte(`{"run_id": "r-cli", "agent": "bulk", "input": "go"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := stepwiseCLI(t, "submit", in, "--inference", "soon"); code == cli.ExitOK || !strings.Contains(errs, `inference mode "soon"`) {
		t.Fatalf("submit --inference soon: exit %d: %s", code, errs)
	}
	if code, _, errs := stepwiseCLI(t, "submit", in, "--inference", "batch", "--follow"); code != cli.ExitOK {
		t.Fatalf("submit: exit %d: %s", code, errs)
	}
	waitBatchedEnd(t, base, "r-cli")
	if got := fake.batched(); got != batchSteps || fake.live.Load() != 0 {
		t.Fatalf("%d requests through batches, %d live; want the run's %d steps batched", got, fake.live.Load(), batchSteps)
	}
}
