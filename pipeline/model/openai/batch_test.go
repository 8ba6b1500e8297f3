package openai_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model/openai"
)

func TestBatch_settings_default_to_openais_limits_and_each_problem_is_reported(t *testing.T) {
	t.Setenv(keyEnv, apiKey)
	for _, c := range []struct {
		name, extra string
		want        openai.BatchSettings
		on          bool
	}{
		{"no batch", ``, openai.BatchSettings{}, false},
		{"empty batch", `"batch":{}`, openai.BatchSettings{Window: 24 * time.Hour, MaxWait: 5 * time.Minute, MaxRequests: 50_000, MaxBytes: 200 << 20,
			Default: pipeline.InferenceBatch, LiveWithin: 24 * time.Hour, OnError: openai.BatchOnErrorFail, OnFailure: openai.BatchOnFailureRetry}, true},
		{"a window is how near a deadline runs infer live", `"batch":{"window":"48h"}`, openai.BatchSettings{Window: 48 * time.Hour, MaxWait: 5 * time.Minute,
			MaxRequests: 50_000, MaxBytes: 200 << 20, Default: pipeline.InferenceBatch, LiveWithin: 48 * time.Hour, OnError: openai.BatchOnErrorFail, OnFailure: openai.BatchOnFailureRetry}, true},
		{"every setting", `"batch":{"window":"48h","max_wait":"30s","max_requests":10,"max_bytes":1000,"default":"live","live_within":"10m","on_error":"retry","on_failure":"live"}`,
			openai.BatchSettings{Window: 48 * time.Hour, MaxWait: 30 * time.Second, MaxRequests: 10, MaxBytes: 1000,
				Default: pipeline.InferenceLive, LiveWithin: 10 * time.Minute, OnError: openai.BatchOnErrorRetry, OnFailure: openai.BatchOnFailureLive}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := openai.New(modelConfig(t, "", c.extra))
			if err != nil {
				t.Fatal(err)
			}
			if got, on := m.Batch(); got != c.want || on != c.on {
				t.Fatalf("Batch() = %+v, %v; want %+v, %v", got, on, c.want, c.on)
			}
		})
	}
	_, err := openai.New(modelConfig(t, "", `"batch":{"window":"90m","max_wait":"-1s","max_requests":0,"max_bytes":"big","size":1,`+
		`"default":"sometimes","live_within":"0s","on_error":"ignore","on_failure":3}`))
	if !errors.Is(err, openai.ErrInvalidConfig) {
		t.Fatalf("err = %v; want ErrInvalidConfig", err)
	}
	for _, want := range []string{"model.batch.window", "model.batch.max_wait", "model.batch.max_requests", "model.batch.max_bytes", "model.batch.size: unknown setting",
		"model.batch.default: want one of batch, live", "model.batch.live_within", "model.batch.on_error: want one of fail, retry",
		"model.batch.on_failure: want one of retry, live"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err lacks %q:\n%v", want, err)
		}
	}
}

// A batch's line carries the body the live call would send, so a step's
// answer is the same whichever way it went.
func TestBatchLine_carries_the_live_requests_body_and_BatchAnswer_reads_the_live_answer(t *testing.T) {
	t.Setenv(keyEnv, apiKey)
	m, err := openai.New(modelConfig(t, "", `"temperature":0.2,"batch":{}`))
	if err != nil {
		t.Fatal(err)
	}
	line, name, err := m.BatchLine("r1.0.1", conversation())
	if err != nil || name != "test-model" {
		t.Fatalf("BatchLine: %q, %v", name, err)
	}
	var l struct {
		CustomID string         `json:"custom_id"`
		Method   string         `json:"method"`
		URL      string         `json:"url"`
		Body     map[string]any `json:"body"`
	}
	if err := json.Unmarshal(line, &l); err != nil {
		t.Fatal(err)
	}
	if l.CustomID != "r1.0.1" || l.Method != "POST" || l.URL != "/v1/chat/completions" || l.Body["model"] != "test-model" || l.Body["temperature"] != 0.2 {
		t.Fatalf("line %s", line)
	}
	if _, ok := l.Body["stream"]; ok {
		t.Fatalf("a batch line asks to stream: %s", line)
	}
	if got := jsonOf(t, l.Body["messages"]); !sameJSON(t, got, wantMessages) {
		t.Errorf("messages =\n%s\nwant\n%s", got, wantMessages)
	}
	if got := jsonOf(t, l.Body["tools"]); !sameJSON(t, got, wantTools) {
		t.Errorf("tools =\n%s\nwant\n%s", got, wantTools)
	}
	resp, err := m.BatchAnswer([]byte(completion(`{"role":"assistant","content":"ok"}`, "stop")))
	if err != nil || resp.Text != "ok" {
		t.Fatalf("BatchAnswer: %+v, %v", resp, err)
	}
	if _, err := m.BatchAnswer([]byte(`{"error":{"message":"no"}}`)); !errors.Is(err, openai.ErrMalformedResponse) {
		t.Fatalf("an error body: %v; want ErrMalformedResponse", err)
	}
}
