package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func TestBatchRun_picks_the_share_of_the_runs_spread_evenly(t *testing.T) {
	for _, c := range []struct {
		share      float64
		runs, want int
	}{{0.2, 60, 12}, {0.1, 1000, 100}, {-1, 60, 0}, {1, 7, 7}} {
		got, run := 0, 0
		for i := range c.runs {
			if batchRun(i, c.share) {
				got++
				if i-run > int(1/c.share)+1 {
					t.Errorf("share %g: runs %d to %d have none in batch mode", c.share, run, i)
				}
				run = i
			}
		}
		if got != c.want {
			t.Errorf("share %g of %d runs: %d in batch mode, want %d", c.share, c.runs, got, c.want)
		}
	}
}

// The batcher's holder is the program whose key polled a batch in
// flight; once the batch has ended, nobody holds one in flight.
func TestBatchAPI_names_the_program_that_polls_a_batch_in_flight(t *testing.T) {
	api := newBatchAPI()
	defer api.close()
	var later atomic.Int64 // how far the fake's clock is ahead
	api.fake.Now = func() time.Time { return time.Now().Add(time.Duration(later.Load())) }
	client := func(key string) *oai.Client {
		c := oai.NewClient(option.WithBaseURL(api.srv.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
		return &c
	}
	ctx := context.Background()
	if h := api.holder(); h != "" {
		t.Fatalf("holder %q before any batch", h)
	}
	line := `{"custom_id":"r.0.1","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"hi"}]}}`
	f, err := client("stepworker-1").Files.New(ctx, oai.FileNewParams{File: oai.File(strings.NewReader(line+"\n"), "in.jsonl", "application/jsonl"), Purpose: oai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	b, err := client("stepworker-1").Batches.New(ctx, oai.BatchNewParams{InputFileID: f.ID, Endpoint: oai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: oai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client("stepworker-2").Batches.Get(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if h := api.holder(); h != "stepworker-2" {
		t.Fatalf("holder %q, want the last poller stepworker-2", h)
	}
	later.Store(int64(2 * batchDelay)) // the batch ends at its next read
	if _, err := client("stepworker-2").Batches.Get(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if h := api.holder(); h != "" {
		t.Fatalf("holder %q with no batch in flight", h)
	}
}

func TestReport_fails_on_a_batch_request_or_answer_twice(t *testing.T) {
	for _, r := range []Report{{BatchRequestsTwice: 1}, {BatchAnswersTwice: 1}} {
		if !r.Failed() {
			t.Errorf("%s: not failed", fmt.Sprintf("%+v", r)[:60])
		}
	}
}
