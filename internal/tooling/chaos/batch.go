package chaos

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/fakebatch"
)

// The batch-inference share of the runs (Config.BatchShare): their agent's
// openai model is in batch mode on the fake OpenAI Batch API the harness
// serves (batchAPI), and they bring no script: the fake answers each step
// with an echo call until batchCalls results are in, then the answer
// (fakebatch.CallsThenAnswers). A provider batch stays in progress for
// batchDelay, so that the churn finds jobs in flight.
const (
	batchAgent  = "chaos_batch"
	batchKeyEnv = "STEPWISE_CHAOS_OPENAI_KEY" // each program's own: its name (batchAPI.holder)
	batchCalls  = 2
	batchDelay  = time.Second
	// batchPollFresh is how recent the last poll of a batch in flight must
	// be for its poller to count as the batcher's holder: a few of the
	// chaos configuration's sweep intervals.
	batchPollFresh = time.Second
)

// batchScript is what a batch run does, as the oracle counts it (calls,
// turns, messages, commits): one echo call a step for batchCalls steps,
// then the answer.
var batchScript = scriptModel{Provider: "openai", Turns: []turn{
	{ToolCalls: []toolCall{{Name: "echo"}}},
	{ToolCalls: []toolCall{{Name: "echo"}}},
	{Text: fmt.Sprintf("done after %d", batchCalls)},
}}

// batchRun reports whether run i of the experiment is in batch mode: the
// share of the runs, spread evenly.
func batchRun(i int, share float64) bool {
	return share > 0 && int(float64(i+1)*share) > int(float64(i)*share)
}

// batchYAML is the agent of the batch runs, its model on the fake at url.
func batchYAML(url string) string {
	return `
  ` + batchAgent + `:
    model: {provider: openai, name: chaos-batch-model, base_url: "` + url + `/v1", api_key_env: ` + batchKeyEnv + `, stream: false,
            batch: {window: 24h, max_wait: 300ms}}
    tools: [echo]`
}

// batchAPI is the fake OpenAI API the harness serves to the programs over
// HTTP, and who polled a batch last: every program has its own API key
// (its name), so the key of a GET /v1/batches/<id> names the step worker
// that holds the model's batcher.
type batchAPI struct {
	fake *fakebatch.Server
	srv  *httptest.Server

	mu       sync.Mutex
	poller   string    // the program that polled a batch last
	polledAt time.Time // when
}

// newBatchAPI serves a fake Batch API on a loopback port.
func newBatchAPI() *batchAPI {
	b := &batchAPI{fake: &fakebatch.Server{Answer: fakebatch.CallsThenAnswers(batchCalls, "echo"), Delay: batchDelay}}
	b.srv = httptest.NewServer(b)
	return b
}

func (b *batchAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id, ok := strings.CutPrefix(r.URL.Path, "/v1/batches/"); ok && r.Method == http.MethodGet && !strings.Contains(id, "/") {
		b.mu.Lock()
		b.poller, b.polledAt = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), time.Now()
		b.mu.Unlock()
	}
	b.fake.ServeHTTP(w, r)
}

// holder names the step worker that holds the batcher while a job is in
// flight: a batch is in progress and that worker polled it within
// batchPollFresh. It is "" otherwise.
func (b *batchAPI) holder() string {
	inFlight := false
	for _, x := range b.fake.Batches() {
		if x.Status == fakebatch.StatusValidating || x.Status == fakebatch.StatusInProgress {
			inFlight = true
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !inFlight || time.Since(b.polledAt) > batchPollFresh {
		return ""
	}
	return b.poller
}

// figures fills the report's batch figures from what the fake was sent.
func (b *batchAPI) figures(rep *Report) {
	rep.BatchJobs = len(b.fake.Batches())
	rep.BatchRequestsTwice = len(b.fake.Repeated())
}

func (b *batchAPI) close() { b.srv.Close() }
