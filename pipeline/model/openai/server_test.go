package openai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model/openai"
)

const (
	keyEnv = "STEPWISE_TEST_OPENAI_KEY"
	apiKey = "sk-test-do-not-leak-42"
)

// endpoint is a Chat Completions server for tests. It records every request
// and answers with reply, given the 1-based number of the request.
type endpoint struct {
	srv   *httptest.Server
	reply func(w http.ResponseWriter, r *http.Request, n int)

	mu   sync.Mutex
	reqs []received
}

// received is one request as the endpoint saw it.
type received struct {
	Method, Path, Auth string
	Body               map[string]any
}

func newEndpoint(t *testing.T, reply func(w http.ResponseWriter, r *http.Request, n int)) *endpoint {
	t.Helper()
	e := &endpoint{reply: reply}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body is not JSON: %v: %s", err, raw)
		}
		e.mu.Lock()
		e.reqs = append(e.reqs, received{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body})
		n := len(e.reqs)
		e.mu.Unlock()
		e.reply(w, r, n)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *endpoint) requests() []received {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]received(nil), e.reqs...)
}

// newModel builds a model on the endpoint; extra is more fields of the model
// object, like `"stream": false`.
func (e *endpoint) newModel(t *testing.T, extra string, opts ...openai.Option) *openai.Model {
	t.Helper()
	t.Setenv(keyEnv, apiKey)
	m, err := openai.New(modelConfig(t, e.srv.URL+"/v1", extra), opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func modelConfig(t *testing.T, baseURL, extra string) config.Model {
	t.Helper()
	obj := fmt.Sprintf(`{"provider":"openai","name":"test-model","base_url":%q,"api_key_env":%q`, baseURL, keyEnv)
	if extra != "" {
		obj += "," + extra
	}
	obj += "}"
	var m config.Model
	if err := json.Unmarshal([]byte(obj), &m); err != nil {
		t.Fatalf("config %s: %v", obj, err)
	}
	return m
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// completion is a whole chat.completion with message as its one choice.
func completion(message, finish string) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"test-model",`+
		`"choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],`+
		`"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`, message, finish)
}

// chunk is one chat.completion.chunk with delta as its one choice's delta;
// finish "" writes finish_reason null.
func chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"test-model",`+
		`"choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}],"usage":null}`, delta, f)
}

// usageChunk is the last chunk when stream_options.include_usage is set.
const usageChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"test-model","choices":[],` +
	`"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`

// writeSSE writes each chunk as a server-sent event, then data: [DONE].
func writeSSE(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// within waits for a result on ch, failing the test if none comes before
// a generous deadline (a hang, not a slow machine).
func within[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
		var zero T
		return zero
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameJSON compares two JSON texts by value.
func sameJSON(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v: %s", err, want)
	}
	return jsonOf(t, g) == jsonOf(t, w)
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
