package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/model/openai"
)

// conversation has every kind of message: the mapping test checks each.
func conversation() model.Request {
	return model.Request{
		RunID:  "r-1",
		Step:   1,
		System: "You are terse.",
		Messages: []pipeline.Message{
			{Role: pipeline.RoleUser, Content: "Refund order 7."},
			{Role: pipeline.RoleAssistant, Content: "", ToolCalls: []pipeline.ToolCallRequest{
				{ID: "call_a", Name: "lookup_order", Arguments: json.RawMessage(`{"order": 7}`)},
				{ID: "call_b", Name: "issue_refund", Arguments: json.RawMessage(`{"amount":12.5}`)},
			}},
			{Role: pipeline.RoleTool, Content: `{"status":"paid"}`, ToolCallID: "call_a"},
			{Role: pipeline.RoleTool, Content: `{"ok":true}`, ToolCallID: "call_b"},
			{Role: pipeline.RoleAssistant, Content: "Looked it up."},
			{Role: pipeline.RoleSystem, Content: "Be brief."},
		},
		Tools: []model.ToolSpec{
			{Name: "lookup_order", Description: "Find an order.", Parameters: json.RawMessage(
				`{"type":"object","properties":{"order":{"type":"integer","maximum":9007199254740993}},"required":["order"]}`)},
			{Name: "ping"},
		},
	}
}

const wantMessages = `[
 {"role":"system","content":"You are terse."},
 {"role":"user","content":"Refund order 7."},
 {"role":"assistant","tool_calls":[
   {"id":"call_a","type":"function","function":{"name":"lookup_order","arguments":"{\"order\": 7}"}},
   {"id":"call_b","type":"function","function":{"name":"issue_refund","arguments":"{\"amount\":12.5}"}}]},
 {"role":"tool","content":"{\"status\":\"paid\"}","tool_call_id":"call_a"},
 {"role":"tool","content":"{\"ok\":true}","tool_call_id":"call_b"},
 {"role":"assistant","content":"Looked it up."},
 {"role":"system","content":"Be brief."}]`

const wantTools = `[
 {"type":"function","function":{"name":"lookup_order","description":"Find an order.",
   "parameters":{"type":"object","properties":{"order":{"type":"integer","maximum":9007199254740993}},"required":["order"]}}},
 {"type":"function","function":{"name":"ping","parameters":{"type":"object"}}}]`

func TestInfer_sends_the_conversation_tools_model_and_key_in_the_wire_format(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if stream {
					writeSSE(w, chunk(`{"role":"assistant","content":"ok"}`, "stop"), usageChunk)
					return
				}
				writeJSON(w, 200, completion(`{"role":"assistant","content":"ok"}`, "stop"))
			})
			m := e.newModel(t, fmt.Sprintf(`"stream":%v,"temperature":0.2,"max_tokens":50`, stream))
			if _, err := m.Infer(context.Background(), conversation()); err != nil {
				t.Fatalf("Infer: %v", err)
			}
			reqs := e.requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
				t.Errorf("request = %s %s, want POST /v1/chat/completions", r.Method, r.Path)
			}
			if r.Auth != "Bearer "+apiKey {
				t.Errorf("Authorization = %q, want the key from %s", r.Auth, keyEnv)
			}
			if r.Body["model"] != "test-model" || r.Body["temperature"] != 0.2 || r.Body["max_tokens"] != 50.0 {
				t.Errorf("model, temperature, max_tokens = %v, %v, %v", r.Body["model"], r.Body["temperature"], r.Body["max_tokens"])
			}
			if got := jsonOf(t, r.Body["messages"]); !sameJSON(t, got, wantMessages) {
				t.Errorf("messages =\n%s\nwant\n%s", got, wantMessages)
			}
			if got := jsonOf(t, r.Body["tools"]); !sameJSON(t, got, wantTools) {
				t.Errorf("tools =\n%s\nwant\n%s", got, wantTools)
			}
			if stream {
				if r.Body["stream"] != true || jsonOf(t, r.Body["stream_options"]) != `{"include_usage":true}` {
					t.Errorf("stream, stream_options = %v, %v; want true, include_usage", r.Body["stream"], r.Body["stream_options"])
				}
			} else if _, ok := r.Body["stream"]; ok {
				t.Errorf("stream = %v in a non-streamed request", r.Body["stream"])
			}
		})
	}
}

func TestInfer_sends_a_big_schema_number_byte_for_byte(t *testing.T) {
	var raw []byte
	var mu sync.Mutex
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, completion(`{"role":"assistant","content":"ok"}`, "stop"))
	})
	capture := option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		b, _ := r.GetBody()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(b)
		mu.Lock()
		raw = buf.Bytes()
		mu.Unlock()
		return next(r)
	})
	m := e.newModel(t, `"stream":false`, openai.WithRequestOptions(capture))
	if _, err := m.Infer(context.Background(), conversation()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Contains(raw, []byte(`"maximum":9007199254740993`)) {
		t.Errorf("the schema's big number was changed on the wire: %s", raw)
	}
}

// scenario is one answer, written by the endpoint as a whole completion or
// as a stream of chunks.
type scenario struct {
	name    string
	message string   // the whole completion's message
	chunks  []string // the same answer as stream chunks (usage chunk added)
	finish  string
	want    model.Response
}

var scenarios = []scenario{
	{
		name:    "text",
		message: `{"role":"assistant","content":"Hello, world"}`,
		chunks: []string{
			chunk(`{"role":"assistant","content":""}`, ""),
			chunk(`{"content":"Hel"}`, ""), chunk(`{"content":"lo, "}`, ""), chunk(`{"content":"world"}`, ""),
			chunk(`{}`, "stop"),
		},
		finish: "stop",
		want:   model.Response{Text: "Hello, world", Usage: pipeline.Usage{InputTokens: 11, OutputTokens: 7}},
	},
	{
		name: "one tool call",
		message: `{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"call_1","type":"function","function":{"name":"lookup_order","arguments":"{\"order\":7}"}}]}`,
		chunks: []string{
			chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup_order","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"ord"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"er\":7}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
		},
		finish: "tool_calls",
		want: model.Response{
			ToolCalls: []pipeline.ToolCallRequest{{ID: "call_1", Name: "lookup_order", Arguments: json.RawMessage(`{"order":7}`)}},
			Usage:     pipeline.Usage{InputTokens: 11, OutputTokens: 7},
		},
	},
	{
		name: "two parallel tool calls with text",
		message: `{"role":"assistant","content":"Checking both.","tool_calls":[` +
			`{"id":"call_1","type":"function","function":{"name":"lookup_order","arguments":"{\"order\":7}"}},` +
			`{"id":"call_2","type":"function","function":{"name":"echo","arguments":"{\"x\":[1,2]}"}}]}`,
		chunks: []string{
			chunk(`{"role":"assistant","content":"Checking "}`, ""),
			chunk(`{"content":"both."}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup_order","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"echo","arguments":"{\"x\":"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"order\":7}"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"[1,2]}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
		},
		finish: "tool_calls",
		want: model.Response{
			Text: "Checking both.",
			ToolCalls: []pipeline.ToolCallRequest{
				{ID: "call_1", Name: "lookup_order", Arguments: json.RawMessage(`{"order":7}`)},
				{ID: "call_2", Name: "echo", Arguments: json.RawMessage(`{"x":[1,2]}`)},
			},
			Usage: pipeline.Usage{InputTokens: 11, OutputTokens: 7},
		},
	},
	{
		name: "invalid argument JSON is kept as a string",
		message: `{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"call_1","type":"function","function":{"name":"echo","arguments":"{\"x\": 1,"}},` +
			`{"id":"call_2","type":"function","function":{"name":"ping","arguments":""}}]}`,
		chunks: []string{
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"echo","arguments":"{\"x\": 1,"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"ping"}}]}`, ""),
			chunk(`{}`, "length"),
		},
		finish: "length",
		want: model.Response{
			ToolCalls: []pipeline.ToolCallRequest{
				{ID: "call_1", Name: "echo", Arguments: json.RawMessage(`"{\"x\": 1,"`)},
				{ID: "call_2", Name: "ping", Arguments: json.RawMessage(`{}`)},
			},
			Usage: pipeline.Usage{InputTokens: 11, OutputTokens: 7},
		},
	},
}

func TestInfer_returns_text_tool_calls_and_usage(t *testing.T) {
	for _, sc := range scenarios {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", sc.name, stream), func(t *testing.T) {
				e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
					if stream {
						writeSSE(w, append(sc.chunks, usageChunk)...)
						return
					}
					writeJSON(w, 200, completion(sc.message, sc.finish))
				})
				m := e.newModel(t, fmt.Sprintf(`"stream":%v`, stream))
				var deltas []string
				req := conversation()
				req.OnText = func(d string) { deltas = append(deltas, d) }
				got, err := m.Infer(context.Background(), req)
				if err != nil {
					t.Fatalf("Infer: %v", err)
				}
				if jsonOf(t, got) != jsonOf(t, sc.want) {
					t.Errorf("response =\n%s\nwant\n%s", jsonOf(t, got), jsonOf(t, sc.want))
				}
				if strings.Join(deltas, "") != sc.want.Text {
					t.Errorf("OnText got %q, want the text %q", deltas, sc.want.Text)
				}
			})
		}
	}
}

func TestInfer_streams_each_text_delta_in_order(t *testing.T) {
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeSSE(w, append(scenarios[0].chunks, usageChunk)...)
	})
	m := e.newModel(t, "") // stream is on by default
	var deltas []string
	req := conversation()
	req.OnText = func(d string) { deltas = append(deltas, d) }
	if _, err := m.Infer(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Hel", "lo, ", "world"}; jsonOf(t, deltas) != jsonOf(t, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	if r := e.requests()[0]; r.Body["stream"] != true {
		t.Errorf("stream = %v; want it on by default", r.Body["stream"])
	}
}

func TestInfer_retries_a_429_after_its_Retry_After(t *testing.T) {
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusTooManyRequests, `{"error":{"message":"slow down","type":"rate_limit_error"}}`)
			return
		}
		writeJSON(w, 200, completion(`{"role":"assistant","content":"ok"}`, "stop"))
	})
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))
	m := e.newModel(t, `"stream":false`, openai.WithLogger(log))
	resp, err := m.Infer(context.Background(), conversation())
	if err != nil {
		t.Fatalf("Infer: %v", err)
	}
	if resp.Text != "ok" || len(e.requests()) != 2 {
		t.Errorf("text %q after %d attempts; want ok after 2", resp.Text, len(e.requests()))
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !contains(logs.String(), "status=429", "retry_after=1", "model=test-model") || strings.Contains(logs.String(), apiKey) {
		t.Errorf("log = %s; want the 429 logged, without the key", logs.String())
	}
}

func TestInfer_does_not_retry_when_Retry_After_is_beyond_the_limit(t *testing.T) {
	// The SDK refuses to wait longer than its retry-delay limit (2 minutes by
	// default) and returns the 429: proof that Retry-After is read at all.
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "3600")
		writeJSON(w, http.StatusTooManyRequests, `{"error":{"message":"quota","type":"rate_limit_error"}}`)
	})
	m := e.newModel(t, `"stream":false`)
	_, err := m.Infer(context.Background(), conversation())
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || !apiErr.Temporary() {
		t.Fatalf("err = %v; want an APIError 429", err)
	}
	// The step worker reads the wait the endpoint asked for from it.
	var limited *model.RateLimitedError
	if !errors.As(err, &limited) || limited.RetryAfter != time.Hour {
		t.Fatalf("err = %v; want a model.RateLimitedError of 1h", err)
	}
	if n := len(e.requests()); n != 1 {
		t.Errorf("%d attempts; want 1", n)
	}
}

func TestInfer_gives_up_after_max_retries_of_5xx(t *testing.T) {
	for _, tc := range []struct {
		extra    string
		attempts int
	}{
		{`"max_retries":1`, 2},
		{`"max_retries":0`, 1},
		{``, 4}, // the default, 3
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.extra, stream), func(t *testing.T) {
				e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
					writeJSON(w, http.StatusInternalServerError, `{"error":{"message":"boom","type":"server_error"}}`)
				})
				extra := fmt.Sprintf(`"stream":%v`, stream)
				if tc.extra != "" {
					extra += "," + tc.extra
				}
				// Short backoff: the test is about the count, not the wait.
				m := e.newModel(t, extra, openai.WithRequestOptions(option.WithMaxRetryDelay(time.Millisecond)))
				_, err := m.Infer(context.Background(), conversation())
				var apiErr *openai.APIError
				if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
					t.Fatalf("err = %v; want an APIError 500", err)
				}
				if !contains(err.Error(), "test-model", "HTTP 500", "boom") {
					t.Errorf("err = %q; want the model, status and message", err)
				}
				if n := len(e.requests()); n != tc.attempts {
					t.Errorf("%d attempts, want %d", n, tc.attempts)
				}
			})
		}
	}
}

func TestInfer_fails_at_once_on_a_client_error_status(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   []string
	}{
		{400, `{"error":{"message":"messages: bad role","type":"invalid_request_error","param":"messages","code":null}}`,
			[]string{"HTTP 400 Bad Request", "invalid_request_error", "messages: bad role"}},
		{401, `{"error":{"message":"Incorrect API key provided: ` + apiKey + `","type":"invalid_request_error","code":"invalid_api_key"}}`,
			[]string{"HTTP 401 Unauthorized", "invalid_api_key", "Incorrect API key provided: [redacted:STEPWISE_TEST_OPENAI_KEY]"}},
		{404, `{"error":{"message":"The model test-model does not exist","type":"invalid_request_error","code":"model_not_found"}}`,
			[]string{"HTTP 404 Not Found", "model_not_found", "does not exist"}},
		{403, `not json at all`, []string{"HTTP 403 Forbidden"}},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, tc.status, tc.body) })
			m := e.newModel(t, `"stream":false`)
			_, err := m.Infer(context.Background(), conversation())
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Temporary() {
				t.Fatalf("err = %v; want a permanent APIError %d", err, tc.status)
			}
			if !contains(err.Error(), tc.want...) || strings.Contains(err.Error(), apiKey) {
				t.Errorf("err = %q; want %q and no key", err, tc.want)
			}
			if n := len(e.requests()); n != 1 {
				t.Errorf("%d attempts; want 1", n)
			}
		})
	}
}

func TestInfer_reports_a_malformed_response(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(w http.ResponseWriter)
		want  string
	}{
		{"not JSON", func(w http.ResponseWriter) { writeJSON(w, 200, `{"id": "chatcmpl-1", "choices": [`) }, "not a JSON object"},
		{"HTML", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>gateway</html>"))
		}, "<html>gateway</html>"},
		{"empty", func(w http.ResponseWriter) { writeJSON(w, 200, ``) }, "empty body"},
		{"no choices", func(w http.ResponseWriter) { writeJSON(w, 200, `{"id":"x","object":"chat.completion","choices":[]}`) }, "no choices"},
		{"error in a 200", func(w http.ResponseWriter) { writeJSON(w, 200, `{"error":{"message":"upstream died"}}`) }, "upstream died"},
		{"call without a name", func(w http.ResponseWriter) {
			writeJSON(w, 200, completion(`{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"","arguments":"{}"}}]}`, "tool_calls"))
		}, "no function name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) { tc.reply(w) })
			m := e.newModel(t, `"stream":false`)
			_, err := m.Infer(context.Background(), conversation())
			if !errors.Is(err, openai.ErrMalformedResponse) || !contains(err.Error(), "test-model", tc.want) {
				t.Fatalf("err = %v; want ErrMalformedResponse mentioning %q", err, tc.want)
			}
		})
	}
}

func TestInfer_reports_a_malformed_stream(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(w http.ResponseWriter)
		want  string
	}{
		{"chunk not JSON", func(w http.ResponseWriter) { writeSSE(w, chunk(`{"content":"a"}`, ""), `{"choices": [oops`) }, "not a valid chunk"},
		{"cut off", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", chunk(`{"content":"a"}`, ""))
		}, "before a finish_reason"},
		{"not a stream", func(w http.ResponseWriter) {
			writeJSON(w, 200, completion(`{"role":"assistant","content":"x"}`, "stop"))
		},
			`got Content-Type "application/json"`},
		{"HTML", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>gateway</html>"))
		}, `got Content-Type "text/html"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) { tc.reply(w) })
			m := e.newModel(t, `"stream":true`)
			_, err := m.Infer(context.Background(), conversation())
			if !errors.Is(err, openai.ErrMalformedResponse) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want ErrMalformedResponse mentioning %q", err, tc.want)
			}
		})
	}
}

func TestInfer_reports_an_error_event_in_a_stream(t *testing.T) {
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeSSE(w, chunk(`{"content":"a"}`, ""), `{"error":{"message":"overloaded mid-stream"}}`)
	})
	m := e.newModel(t, "")
	_, err := m.Infer(context.Background(), conversation())
	if err == nil || !strings.Contains(err.Error(), "overloaded mid-stream") {
		t.Fatalf("err = %v; want the stream's error", err)
	}
}

func TestInfer_refusals_are_errors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		reply  func(w http.ResponseWriter)
		want   string
	}{
		{"refusal", false, func(w http.ResponseWriter) {
			writeJSON(w, 200, completion(`{"role":"assistant","content":null,"refusal":"I can't help with that."}`, "stop"))
		}, "I can't help with that."},
		{"streamed refusal", true, func(w http.ResponseWriter) {
			writeSSE(w, chunk(`{"role":"assistant","refusal":"I can't "}`, ""), chunk(`{"refusal":"help."}`, ""), chunk(`{}`, "stop"))
		}, "I can't help."},
		{"content filter", false, func(w http.ResponseWriter) {
			writeJSON(w, 200, completion(`{"role":"assistant","content":"partial"}`, "content_filter"))
		}, "content_filter"},
		{"streamed content filter", true, func(w http.ResponseWriter) {
			writeSSE(w, chunk(`{"content":"partial"}`, ""), chunk(`{}`, "content_filter"))
		}, "content_filter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) { tc.reply(w) })
			m := e.newModel(t, fmt.Sprintf(`"stream":%v`, tc.stream))
			_, err := m.Infer(context.Background(), conversation())
			if !errors.Is(err, openai.ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want ErrRefused mentioning %q", err, tc.want)
			}
		})
	}
}

func TestInfer_returns_promptly_when_ctx_is_cancelled(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprintf(w, "data: %s\n\n", chunk(`{"content":"first"}`, ""))
					w.(http.Flusher).Flush()
				}
				<-r.Context().Done() // hang until the client goes away
			})
			m := e.newModel(t, fmt.Sprintf(`"stream":%v`, stream))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{})
			var once sync.Once
			req := conversation()
			req.OnText = func(string) { once.Do(func() { close(started) }) }
			done := make(chan error, 1)
			go func() {
				_, err := m.Infer(ctx, req)
				done <- err
			}()
			if stream {
				within(t, "the first delta", started)
			} else {
				waitFor(t, "the request", func() bool { return len(e.requests()) == 1 })
			}
			cancel()
			err := within(t, "Infer after cancel", done)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v; want context.Canceled", err)
			}
			if n := len(e.requests()); n != 1 {
				t.Errorf("%d attempts; a cancelled request must not be retried", n)
			}
		})
	}
}

func TestInfer_times_out_an_attempt_after_the_timeout_setting(t *testing.T) {
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) { <-r.Context().Done() })
	m := e.newModel(t, `"stream":false,"timeout":"50ms","max_retries":0`)
	_, err := m.Infer(context.Background(), conversation())
	if !errors.Is(err, openai.ErrTimeout) || !strings.Contains(err.Error(), "50ms") {
		t.Fatalf("err = %v; want ErrTimeout naming the timeout", err)
	}
}

func TestInfer_refuses_a_request_it_cannot_map(t *testing.T) {
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) { t.Error("no request expected") })
	m := e.newModel(t, "")
	for _, req := range []model.Request{
		{Messages: []pipeline.Message{{Role: "robot", Content: "x"}}},
		{Messages: []pipeline.Message{{Role: pipeline.RoleTool, Content: "x"}}},
		{Tools: []model.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}},
	} {
		if _, err := m.Infer(context.Background(), req); err == nil || !strings.Contains(err.Error(), "build request") {
			t.Errorf("Infer(%+v) err = %v; want a build error", req, err)
		}
	}
}

func TestNew_fails_without_the_API_key_variable(t *testing.T) {
	t.Setenv(keyEnv, "")
	_, err := openai.New(modelConfig(t, "http://127.0.0.1:1/v1", ""))
	if !errors.Is(err, openai.ErrMissingAPIKey) || !strings.Contains(err.Error(), keyEnv) {
		t.Errorf("err = %v; want ErrMissingAPIKey naming %s", err, keyEnv)
	}
	t.Setenv("OPENAI_API_KEY", "sk-from-the-sdk-default") // must not be used instead
	_, err = openai.New(modelConfig(t, "", `"api_key_env":"STEPWISE_TEST_UNSET_VARIABLE_XYZ"`))
	if !errors.Is(err, openai.ErrMissingAPIKey) || !strings.Contains(err.Error(), "STEPWISE_TEST_UNSET_VARIABLE_XYZ") {
		t.Errorf("err = %v; want ErrMissingAPIKey naming the variable", err)
	}
}

func TestNew_reports_every_config_problem_at_once(t *testing.T) {
	t.Setenv(keyEnv, apiKey)
	cfg := modelConfig(t, "ftp://example.com", `"name":"","temperature":"hot","max_tokens":-1,"timeout":"5","max_retries":-2,"stream":"yes","max_token":10`)
	cfg.Name = ""
	_, err := openai.New(cfg)
	if !errors.Is(err, openai.ErrInvalidConfig) {
		t.Fatalf("err = %v; want ErrInvalidConfig", err)
	}
	for _, want := range []string{"model.name", "model.base_url", "model.temperature", "model.max_tokens", "model.timeout",
		"model.max_retries", "model.stream", "model.max_token: unknown setting"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err lacks %q:\n%v", want, err)
		}
	}
}

func TestNew_accepts_a_config_built_in_code(t *testing.T) {
	t.Setenv(keyEnv, apiKey)
	cfg := modelConfig(t, "", "")
	cfg.Raw = nil // built in code, not read from a file: defaults for the rest
	if _, err := openai.New(cfg); err != nil {
		t.Fatal(err)
	}
}

// lockedWriter lets a test read what a logger wrote from another goroutine.
type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestInfer_sends_a_zero_temperature_and_leaves_unset_settings_out(t *testing.T) {
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, completion(`{"role":"assistant","content":"ok"}`, "stop"))
	})
	for _, tc := range []struct {
		extra string
		want  bool
	}{{`"stream":false,"temperature":0`, true}, {`"stream":false`, false}} {
		m := e.newModel(t, tc.extra)
		if _, err := m.Infer(context.Background(), conversation()); err != nil {
			t.Fatal(err)
		}
		reqs := e.requests()
		body := reqs[len(reqs)-1].Body
		temp, ok := body["temperature"]
		if ok != tc.want || (ok && temp != 0.0) {
			t.Errorf("%s: temperature = %v (present %v); want present %v", tc.extra, temp, ok, tc.want)
		}
		if _, ok := body["max_tokens"]; ok {
			t.Errorf("%s: max_tokens sent though unset", tc.extra)
		}
	}
}

func TestInfer_is_safe_for_concurrent_use(t *testing.T) {
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeSSE(w, append(scenarios[2].chunks, usageChunk)...)
	})
	m := e.newModel(t, "")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			resp, err := m.Infer(context.Background(), conversation())
			if err == nil && len(resp.ToolCalls) != 2 {
				err = fmt.Errorf("%d calls, want 2", len(resp.ToolCalls))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
