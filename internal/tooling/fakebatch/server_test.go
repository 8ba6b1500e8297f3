package fakebatch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/stepwise-run/stepwise/internal/tooling/fakebatch"
)

// newClient serves s and returns an openai-go client of it, which does
// not retry (so an injected fault shows).
func newClient(t *testing.T, s *fakebatch.Server) oai.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return oai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0))
}

// echo answers a chat completion with the request's last message's text,
// and fails the lines whose custom_id starts with "bad".
func echo(customID string, body json.RawMessage) (json.RawMessage, *fakebatch.LineError) {
	if strings.HasPrefix(customID, "bad") {
		return nil, &fakebatch.LineError{Status: 400, Code: "invalid_value", Message: "a bad request"}
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	text := req.Messages[len(req.Messages)-1].Content
	out, _ := json.Marshal(map[string]any{"id": "chatcmpl-" + customID, "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "echo: " + text}}},
		"usage":   map[string]any{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
	return out, nil
}

// input is a JSON Lines file of chat completion requests, one a custom_id.
func input(model string, ids ...string) []byte {
	var b bytes.Buffer
	for _, id := range ids {
		line, _ := json.Marshal(map[string]any{"custom_id": id, "method": "POST", "url": "/v1/chat/completions",
			"body": map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": "hi " + id}}}})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// submit uploads content and creates a batch of it.
func submit(t *testing.T, c oai.Client, content []byte) *oai.Batch {
	t.Helper()
	ctx := context.Background()
	f, err := c.Files.New(ctx, oai.FileNewParams{File: oai.File(bytes.NewReader(content), "in.jsonl", "application/jsonl"), Purpose: oai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Batches.New(ctx, oai.BatchNewParams{InputFileID: f.ID, Endpoint: oai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: oai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lines reads a file's JSON Lines by custom_id.
func lines(t *testing.T, c oai.Client, id string) map[string]map[string]any {
	t.Helper()
	res, err := c.Files.Content(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := map[string]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %s: %v", sc.Text(), err)
		}
		out[l["custom_id"].(string)] = l
	}
	return out
}

// Through openai-go: a batch of three requests, one of them failing,
// completes with the two answers in its output file and the failed line
// in its error file, each by custom_id.
func TestServer_completes_a_batch_into_its_output_and_error_files(t *testing.T) {
	s := &fakebatch.Server{Answer: echo}
	c := newClient(t, s)
	b := submit(t, c, input("gpt-4o-mini", "r1.0.0", "r2.0.0", "bad.0.0"))
	got, err := c.Batches.Get(context.Background(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != oai.BatchStatusCompleted || got.RequestCounts.Total != 3 || got.RequestCounts.Completed != 2 || got.RequestCounts.Failed != 1 {
		t.Fatalf("batch %+v", got)
	}
	out := lines(t, c, got.OutputFileID)
	var answer oai.ChatCompletion
	body, _ := json.Marshal(out["r1.0.0"]["response"].(map[string]any)["body"])
	if err := json.Unmarshal(body, &answer); err != nil || len(out) != 2 || answer.Choices[0].Message.Content != "echo: hi r1.0.0" {
		t.Fatalf("output %v (%v)", out, err)
	}
	errs := lines(t, c, got.ErrorFileID)
	if e := errs["bad.0.0"]; len(errs) != 1 || e["response"].(map[string]any)["status_code"] != 400.0 {
		t.Fatalf("errors %v", errs)
	}
	if r := s.Repeated(); len(r) != 0 {
		t.Errorf("repeated custom_ids %v", r)
	}
}

// A file whose custom_ids repeat, or whose lines name two models, fails
// validation with the reasons; faults fail an upload, a creation, a whole
// batch, or expire one; a custom_id sent in two batches is counted.
func TestServer_refuses_bad_input_and_fails_as_told(t *testing.T) {
	s := &fakebatch.Server{Answer: echo}
	c := newClient(t, s)
	ctx := context.Background()
	for name, content := range map[string][]byte{
		"duplicate_custom_id": input("m", "a", "a"),
		"mismatched_model":    append(input("m", "a"), input("n", "b")...),
	} {
		b := submit(t, c, content)
		if b.Status != oai.BatchStatusFailed || len(b.Errors.Data) != 1 || b.Errors.Data[0].Code != name {
			t.Errorf("%s: batch %+v", name, b)
		}
	}
	s.Faults.FailUploads(1)
	if _, err := c.Files.New(ctx, oai.FileNewParams{File: oai.File(bytes.NewReader(input("m", "x")), "in.jsonl", "application/jsonl"), Purpose: oai.FilePurposeBatch}); err == nil {
		t.Error("an upload told to fail did not")
	}
	s.Faults.FailBatches(1)
	if b := submit(t, c, input("m", "x")); b.Status != oai.BatchStatusFailed {
		t.Errorf("a batch told to fail: %+v", b)
	}
	s.Faults.ExpireBatches(1)
	b := submit(t, c, input("m", "x", "y"))
	got, err := c.Batches.Get(ctx, b.ID)
	if err != nil || got.Status != oai.BatchStatusExpired || got.OutputFileID != "" || len(lines(t, c, got.ErrorFileID)) != 2 {
		t.Errorf("a batch told to expire: %+v, %v", got, err)
	}
	submit(t, c, input("m", "x"))
	if r := s.Repeated(); fmt.Sprint(r) != "[x]" {
		t.Errorf("repeated custom_ids %v, want [x] (sent in the expired batch and again)", r)
	}
	if n := len(s.Batches()); n != 5 {
		t.Errorf("%d batches, want 5", n)
	}
}

// A batch stays in progress for the server's Delay, then completes; one
// cancelled before is cancelled, its lines never answered.
func TestServer_holds_a_batch_in_progress_for_its_delay_and_cancels_it(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := &fakebatch.Server{Answer: echo, Delay: time.Minute, Now: func() time.Time { return now }}
	c := newClient(t, s)
	ctx := context.Background()
	b := submit(t, c, input("m", "a"))
	kept := submit(t, c, input("m", "b"))
	if got, _ := c.Batches.Get(ctx, b.ID); got.Status != oai.BatchStatusInProgress {
		t.Fatalf("before its delay: %+v", got)
	}
	if got, err := c.Batches.Cancel(ctx, kept.ID); err != nil || got.Status != oai.BatchStatusCancelled {
		t.Fatalf("cancel: %+v, %v", got, err)
	}
	now = now.Add(time.Minute)
	if got, _ := c.Batches.Get(ctx, b.ID); got.Status != oai.BatchStatusCompleted || got.CompletedAt != now.Unix() {
		t.Errorf("after its delay: %+v", got)
	}
	if got, _ := c.Batches.Get(ctx, kept.ID); got.Status != oai.BatchStatusCancelled || got.OutputFileID != "" {
		t.Errorf("the cancelled batch after the delay: %+v", got)
	}
}

// The live API beside the batch one answers a chat completion at once
// with the same Answer, and the lines it fails as API errors.
func TestServer_answers_a_live_chat_completion_with_the_same_answer(t *testing.T) {
	c := newClient(t, &fakebatch.Server{Answer: echo})
	got, err := c.Chat.Completions.New(context.Background(), oai.ChatCompletionNewParams{
		Model: "m", Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	if text := got.Choices[0].Message.Content; text != "echo: hello" || got.Usage.TotalTokens != 5 {
		t.Errorf("answer %q, usage %+v", text, got.Usage)
	}
	bad := newClient(t, &fakebatch.Server{Answer: func(string, json.RawMessage) (json.RawMessage, *fakebatch.LineError) {
		return nil, &fakebatch.LineError{Status: 400, Code: "invalid_value", Message: "a bad request"}
	}})
	_, err = bad.Chat.Completions.New(context.Background(), oai.ChatCompletionNewParams{
		Model: "m", Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hello")}})
	if apiErr := (*oai.Error)(nil); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Message != "a bad request" {
		t.Errorf("a failed answer: %v", err)
	}
}
