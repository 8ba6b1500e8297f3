package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/kafka"
)

// A secret the configuration names and an outside service echoes — an
// http tool's header in a good and in a failing answer, a model's API key
// in its text — reaches neither the run's calls, its messages, its event
// log nor the logs.
func TestSecrets_echoed_secrets_are_redacted_everywhere(t *testing.T) {
	const token, apiKey = "tool-token-8f3a9c", "sk-model-key-77d2e1"
	t.Setenv("STEPWISE_TEST_TOOL_TOKEN", token)
	t.Setenv("STEPWISE_TEST_OPENAI_KEY", apiKey)
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/fail") {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"error":"token %s is not allowed"}`, r.Header.Get("X-Token"))
			return
		}
		fmt.Fprintf(w, `{"you_sent":%s,"with":%q}`, body, r.Header.Get("X-Token"))
	}))
	defer echo.Close()
	turn := 0
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		turn++
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		if turn == 1 {
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"my key is %s","tool_calls":[{"id":"a","type":"function","function":{"name":"leaky","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"leaky_fail","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, key)
			return
		}
		fmt.Fprint(w, `{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer model.Close()
	cfg := parseConfig(t, fmt.Sprintf(`
kafka: {partitions: 4}
stepworker: {lease: 2s, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 2s}
agents:
  leaky:
    model: {provider: openai, name: m, base_url: %q, api_key_env: STEPWISE_TEST_OPENAI_KEY, stream: false, max_retries: 0}
    tools: [leaky, leaky_fail]
tools:
  leaky: {executor: {http: {url: %q, headers_env: {X-Token: STEPWISE_TEST_TOOL_TOKEN}}}}
  leaky_fail: {executor: {http: {url: %q, headers_env: {X-Token: STEPWISE_TEST_TOOL_TOKEN}}}, max_attempts: 1}
`, model.URL+"/v1", echo.URL+"/ok", echo.URL+"/fail"))
	in := newInfra(t)
	stack, logs := connectLogged(t, in, cfg)
	v, run, msgs := runLeaky(t, stack, "r-leak")
	stack.Logger.Info("a log line quoting " + token) // the logs pass through the same redaction
	events, _ := json.Marshal(runEvents(t, stack, "r-leak"))
	for where, text := range map[string]string{"the run": string(run), "the messages": string(msgs), "the events": string(events), "the logs": logs.String()} {
		for _, secret := range []string{token, apiKey} {
			if strings.Contains(text, secret) {
				t.Errorf("%s hold the secret %s", where, secret)
			}
		}
	}
	for _, want := range []string{"[redacted:STEPWISE_TEST_TOOL_TOKEN]", "[redacted:STEPWISE_TEST_OPENAI_KEY]"} {
		if !strings.Contains(string(msgs), want) {
			t.Errorf("the messages do not show %s: %s", want, msgs)
		}
	}
	if callOf(v, "b").Status != "failed" || !strings.Contains(callOf(v, "b").Error, "[redacted:STEPWISE_TEST_TOOL_TOKEN]") {
		t.Errorf("the failing call: %+v", callOf(v, "b"))
	}
	if !strings.Contains(logs.String(), "a log line quoting [redacted:STEPWISE_TEST_TOOL_TOKEN]") {
		t.Errorf("the log line was not redacted")
	}
}

// A secret an http tool's endpoint echoes in a spelling other than its
// own — `/` written `\/` (PHP's default JSON), every character written
// \u00XX, or in a failing answer across the 512-byte cut of its excerpt —
// leaves nothing of itself, decoded or not, in the API's answers, Redis,
// the tool-results records or the logs.
func TestSecrets_no_spelling_of_an_echoed_secret_and_no_part_of_a_cut_one_is_kept(t *testing.T) {
	const token = "tok/3f9a-0c77-4b1e-9d22-5e6f7a8b9c0d" // 36 characters
	t.Setenv("STEPWISE_TEST_TOOL_TOKEN", token)
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("X-Token")
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/slash":
			fmt.Fprintf(w, `{"echo":"%s"}`, strings.ReplaceAll(got, "/", `\/`))
		case "/unicode":
			var esc strings.Builder
			for _, c := range got {
				fmt.Fprintf(&esc, `\u%04X`, c)
			}
			fmt.Fprintf(w, `{"echo":"%s"}`, esc.String())
		default: // the token starts 12 bytes before the excerpt's end
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, strings.Repeat("x", 500)+got)
		}
	}))
	defer echo.Close()
	cfg := parseConfig(t, fmt.Sprintf(`
kafka: {partitions: 4}
stepworker: {lease: 2s, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 2s}
agents:
  leaky:
    model: {provider: script, turns: [{tool_calls: [{id: a, name: slash}, {id: b, name: unicode}, {id: c, name: cut}]}]}
    tools: [slash, unicode, cut]
tools:
  slash: {executor: {http: {url: %[1]q, headers_env: {X-Token: STEPWISE_TEST_TOOL_TOKEN}}}}
  unicode: {executor: {http: {url: %[2]q, headers_env: {X-Token: STEPWISE_TEST_TOOL_TOKEN}}}}
  cut: {executor: {http: {url: %[3]q, headers_env: {X-Token: STEPWISE_TEST_TOOL_TOKEN}}}, max_attempts: 1}
`, echo.URL+"/slash", echo.URL+"/unicode", echo.URL+"/cut"))
	in := newInfra(t)
	stack, logs := connectLogged(t, in, cfg)
	v, run, msgs := runLeaky(t, stack, "r-spell")
	var results strings.Builder
	err := kafka.ReadTopic(context.Background(), kafka.Plain(in.brokers...), stack.Names.ToolResults(), func(m *sarama.ConsumerMessage) error {
		results.Write(m.Value)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{
		"the run": string(run), "the messages": string(msgs), "Redis": redisText(t, stack.Redis),
		"the tool-results records": results.String(), "the logs": logs.String(),
	} {
		if decoded := unescapeJSON(text); strings.Contains(decoded, "tok/3f9a") || strings.Contains(decoded, "0c77-4b1e") {
			t.Errorf("%s hold part of the token: %s", where, text)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		if c := callOf(v, id); !strings.Contains(string(c.Result)+c.Error, "[redacted:") { // cut within the mark for c
			t.Errorf("call %s shows no redaction: %+v", id, c)
		}
	}
}

// runLeaky runs the workers and the gateway of stack, creates run id of
// agent leaky, and returns it once done, with the JSON of
// GET /v1/runs/{id} and /v1/runs/{id}/messages.
func runLeaky(t *testing.T, stack *app.Stack, id string) (v runView, run, msgs json.RawMessage) {
	t.Helper()
	workers(t, stack)
	base := serve(t, stack)
	if code := httpDo(t, http.MethodPost, base+"/v1/runs", map[string]any{"run_id": id, "agent": "leaky", "input": "go"}, nil); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	v = waitDone(t, base, id, 30*time.Second)
	httpDo(t, http.MethodGet, base+"/v1/runs/"+id, nil, &run)
	httpDo(t, http.MethodGet, base+"/v1/runs/"+id+"/messages", nil, &msgs)
	return v, run, msgs
}

// unescapeJSON undoes, at any depth of quoting, the escapes `\/` and
// `\uXXXX` in text, so that a secret spelled with them reads as itself.
func unescapeJSON(text string) string {
	text = regexp.MustCompile(`\\+/`).ReplaceAllString(text, "/")
	return regexp.MustCompile(`\\+u([0-9a-fA-F]{4})`).ReplaceAllStringFunc(text, func(esc string) string {
		n, _ := strconv.ParseUint(esc[len(esc)-4:], 16, 32)
		return string(rune(n))
	})
}

// redisText is every key of rdb and its value, as text.
func redisText(t *testing.T, rdb redis.UniversalClient) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		var val any
		var err error
		switch typ := rdb.Type(ctx, key).Val(); typ {
		case "string":
			val, err = rdb.Get(ctx, key).Result()
		case "hash":
			val, err = rdb.HGetAll(ctx, key).Result()
		case "list":
			val, err = rdb.LRange(ctx, key, 0, -1).Result()
		case "set":
			val, err = rdb.SMembers(ctx, key).Result()
		case "zset":
			val, err = rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
		case "stream":
			val, err = rdb.XRange(ctx, key, "-", "+").Result()
		default:
			t.Fatalf("key %s has a type this test does not read: %s", key, typ)
		}
		if err != nil {
			t.Fatalf("read %s: %v", key, err)
		}
		fmt.Fprintf(&b, "%s %v\n", key, val)
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
