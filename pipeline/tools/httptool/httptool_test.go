package httptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/secrets"
	"github.com/stepwise-run/stepwise/pipeline/tools"
	"github.com/stepwise-run/stepwise/pipeline/tools/httptool"
)

// seen is what the endpoint received.
type seen struct {
	Method, Path, RawQuery, Body string
	Header                       http.Header
}

// endpoint starts an HTTP server that records each request and answers with
// reply; it is closed when t ends.
func endpoint(t *testing.T, reply http.HandlerFunc) (*httptest.Server, func() []seen) {
	t.Helper()
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.URL.RawQuery, string(body), r.Header.Clone()})
		mu.Unlock()
		reply(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
}

func answer(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		} else {
			w.Header()["Content-Type"] = nil // no sniffing: send none
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func newTool(t *testing.T, cfg config.HTTPExecutor, opts ...httptool.Option) tools.Tool {
	t.Helper()
	tool, err := httptool.New("lookup", cfg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tool
}

func call(args string, attempt int) tools.Call {
	return tools.Call{RunID: "r-1", CallID: "c-7", Step: 2, Attempt: attempt, Tool: "lookup", Arguments: json.RawMessage(args)}
}

func TestExecute_posts_the_arguments_with_the_idempotency_headers(t *testing.T) {
	t.Setenv("LOOKUP_TOKEN", "Bearer s3cret")
	srv, got := endpoint(t, answer(200, "application/json", `{"order":"o-1","status":"shipped"}`))
	tool := newTool(t, config.HTTPExecutor{URL: srv.URL + "/orders", HeadersEnv: map[string]string{"Authorization": "LOOKUP_TOKEN"}})

	out, err := tool.Execute(context.Background(), call(`{"order":"o-1"}`, 1))
	if err != nil || string(out) != `{"order":"o-1","status":"shipped"}` {
		t.Fatalf("Execute = %s, %v", out, err)
	}
	reqs := got()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d, want 1", len(reqs))
	}
	r := reqs[0]
	checks := map[string][2]string{
		"method":          {r.Method, "POST"},
		"path":            {r.Path, "/orders"},
		"body":            {r.Body, `{"order":"o-1"}`},
		"Content-Type":    {r.Header.Get("Content-Type"), "application/json"},
		"Authorization":   {r.Header.Get("Authorization"), "Bearer s3cret"},
		"Idempotency-Key": {r.Header.Get("Idempotency-Key"), "r-1:c-7"},
		"attempt":         {r.Header.Get("X-Stepwise-Attempt"), "1"},
	}
	for what, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", what, c[0], c[1])
		}
	}
}

func TestExecute_keeps_the_idempotency_key_across_attempts(t *testing.T) {
	srv, got := endpoint(t, answer(200, "application/json", `{}`))
	tool := newTool(t, config.HTTPExecutor{URL: srv.URL, Method: "PUT"})
	for attempt := 1; attempt <= 3; attempt++ {
		if _, err := tool.Execute(context.Background(), call(`{"a":1}`, attempt)); err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
	}
	for i, r := range got() {
		if r.Method != "PUT" || r.Body != `{"a":1}` {
			t.Errorf("request %d: %s %q, want PUT with the arguments", i, r.Method, r.Body)
		}
		if k := r.Header.Get("Idempotency-Key"); k != "r-1:c-7" {
			t.Errorf("request %d: Idempotency-Key = %q", i, k)
		}
		if a := r.Header.Get("X-Stepwise-Attempt"); a != string(rune('1'+i)) {
			t.Errorf("request %d: X-Stepwise-Attempt = %q, want %d", i, a, i+1)
		}
	}
}

func TestExecute_sends_empty_arguments_as_an_empty_object(t *testing.T) {
	srv, got := endpoint(t, answer(200, "application/json", `{}`))
	if _, err := newTool(t, config.HTTPExecutor{URL: srv.URL}).Execute(context.Background(), call(``, 1)); err != nil {
		t.Fatal(err)
	}
	if b := got()[0].Body; b != "{}" {
		t.Fatalf("body = %q, want {}", b)
	}
}

func TestExecute_GET_sends_the_arguments_as_query_parameters(t *testing.T) {
	srv, got := endpoint(t, answer(200, "application/json", `[]`))
	tool := newTool(t, config.HTTPExecutor{URL: srv.URL + "/search?api=v2", Method: "GET"})
	args := `{"q":"blue shoes","limit":10,"exact":true,"tags":["a","b c",3],"filter":{"size":42},"none":null}`
	if _, err := tool.Execute(context.Background(), call(args, 1)); err != nil {
		t.Fatal(err)
	}
	r := got()[0]
	want := "api=v2&exact=true&filter=%7B%22size%22%3A42%7D&limit=10&none=null&q=blue+shoes&tags=a&tags=b+c&tags=3"
	if r.Method != "GET" || r.RawQuery != want || r.Body != "" {
		t.Fatalf("got %s ?%s body %q\nwant GET ?%s without a body", r.Method, r.RawQuery, r.Body, want)
	}
	if r.Header.Get("Idempotency-Key") != "r-1:c-7" || r.Header.Get("Content-Type") != "" {
		t.Fatalf("headers = %v", r.Header)
	}
}

func TestExecute_takes_the_2xx_body_as_the_result(t *testing.T) {
	cases := []struct{ name, status, contentType, body, want string }{
		{"JSON as it is", "200", "application/json; charset=utf-8", ` {"ok": true} `, `{"ok": true}`},
		{"a +json type is JSON", "200", "application/problem+json", `{"a":1}`, `{"a":1}`},
		{"text becomes a JSON string", "200", "text/plain", "hello \"world\"\n", `"hello \"world\"\n"`},
		{"text that parses as JSON is still text", "200", "text/plain", `42`, `"42"`},
		{"no content type and JSON is JSON", "201", "", `[1,2]`, `[1,2]`},
		{"no content type and not JSON is text", "200", "", `plain words`, `"plain words"`},
		{"a JSON type with a broken body is text", "200", "application/json", `{"a":`, `"{\"a\":"`},
		{"an empty body is null", "204", "", ``, `null`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status := map[string]int{"200": 200, "201": 201, "204": 204}[c.status]
			srv, _ := endpoint(t, answer(status, c.contentType, c.body))
			out, err := newTool(t, config.HTTPExecutor{URL: srv.URL}).Execute(context.Background(), call(`{}`, 1))
			if err != nil || string(out) != c.want {
				t.Fatalf("Execute = %s, %v; want %s", out, err, c.want)
			}
		})
	}
}

func TestExecute_fails_a_non_2xx_status_with_an_excerpt(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes, two per rune
	cases := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"the body is the detail", 422, `{"error":"amount must be positive"}`, `HTTP 422: {"error":"amount must be positive"}`},
		{"an empty body gives the status text", 503, ``, `HTTP 503: Service Unavailable`},
		{"a long body is cut at 512 bytes on a rune boundary", 500, long, "HTTP 500: " + strings.Repeat("é", 256) + "…(truncated)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, _ := endpoint(t, answer(c.status, "application/json", c.body))
			_, err := newTool(t, config.HTTPExecutor{URL: srv.URL}).Execute(context.Background(), call(`{}`, 1))
			if err == nil || err.Error() != c.want {
				t.Fatalf("error = %v\nwant %s", err, c.want)
			}
			var se *httptool.StatusError
			if !errors.As(err, &se) || se.StatusCode != c.status {
				t.Fatalf("error %T is not a *StatusError with status %d", err, c.status)
			}
		})
	}
}

func TestExecute_redacts_an_error_body_before_cutting_it(t *testing.T) {
	const secret = "tok/3f9a-0c77-4b1e-9d22-5e6f7a8b9c0d" // 36 characters
	r := secrets.New(map[string]string{"TOOL_TOKEN": secret})
	pad := strings.Repeat("x", httptool.ExcerptBytes-12) // the secret spans byte 512
	for name, body := range map[string]string{
		"as written, across the cut":    pad + secret,
		"slash escaped, across the cut": pad + strings.ReplaceAll(secret, "/", `\/`),
		"as \\u escapes":                `{"error":"bad token \u0074\u006F\u006b\u002F3f9a-0c77-4b1e-9d22-5e6f7a8b9c0d"}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv, _ := endpoint(t, answer(http.StatusForbidden, "application/json", body))
			_, err := newTool(t, config.HTTPExecutor{URL: srv.URL}, httptool.WithRedactor(r)).Execute(context.Background(), call(`{}`, 1))
			if err == nil || strings.Contains(err.Error(), "3f9a") || strings.Contains(err.Error(), "tok/") {
				t.Fatalf("error = %v: part of the secret is left", err)
			}
		})
	}
}

func TestExecute_reports_a_refused_connection_without_the_query(t *testing.T) {
	srv, _ := endpoint(t, answer(200, "", ""))
	url := srv.URL
	srv.Close()
	tool := newTool(t, config.HTTPExecutor{URL: url + "/find?key=k", Method: "GET"})
	_, err := tool.Execute(context.Background(), call(`{"secret_arg":"x"}`, 1))
	if err == nil || !strings.HasPrefix(err.Error(), "GET "+url+"/find: ") || strings.Contains(err.Error(), "secret_arg") {
		t.Fatalf("error = %v, want it to start with GET %s/find: and hold no query", err, url)
	}
}

func TestExecute_gives_up_after_the_executor_timeout(t *testing.T) {
	release := make(chan struct{})
	srv, _ := endpoint(t, func(w http.ResponseWriter, r *http.Request) {
		select { // answer only once the client has given up
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	tool := newTool(t, config.HTTPExecutor{URL: srv.URL, Timeout: config.D(50 * time.Millisecond)})
	_, err := tool.Execute(context.Background(), call(`{}`, 1))
	if want := "POST " + srv.URL + ": no response within 50ms"; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
}

func TestExecute_returns_when_the_call_is_cancelled(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv, _ := endpoint(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	_, err := newTool(t, config.HTTPExecutor{URL: srv.URL}).Execute(ctx, call(`{}`, 1))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestExecute_refuses_a_response_larger_than_the_bound(t *testing.T) {
	srv, _ := endpoint(t, answer(200, "text/plain", strings.Repeat("x", 101)))
	tool := newTool(t, config.HTTPExecutor{URL: srv.URL}, httptool.WithMaxResponseBytes(100))
	if _, err := tool.Execute(context.Background(), call(`{}`, 1)); err == nil || !strings.Contains(err.Error(), "response body exceeds 100 bytes") {
		t.Fatalf("error = %v", err)
	}
}

func TestExecute_refuses_arguments_that_are_not_JSON(t *testing.T) {
	srv, got := endpoint(t, answer(200, "", ""))
	for _, method := range []string{"POST", "GET"} {
		_, err := newTool(t, config.HTTPExecutor{URL: srv.URL, Method: method}).Execute(context.Background(), call(`{"a":`, 1))
		if err == nil {
			t.Fatalf("%s: no error for malformed arguments", method)
		}
	}
	if n := len(got()); n != 0 {
		t.Fatalf("%d requests sent, want none", n)
	}
}

func TestNew_names_every_missing_environment_variable_and_no_value(t *testing.T) {
	t.Setenv("PRESENT_TOKEN", "value-that-must-not-leak")
	t.Setenv("EMPTY_TOKEN", "")
	_, err := httptool.New("lookup", config.HTTPExecutor{URL: "https://example.com", HeadersEnv: map[string]string{
		"Authorization": "PRESENT_TOKEN",
		"X-Api-Key":     "ABSENT_TOKEN_FOR_TEST",
		"X-Other":       "EMPTY_TOKEN",
	}})
	if err == nil {
		t.Fatal("New succeeded with a missing environment variable")
	}
	msg := err.Error()
	for _, want := range []string{"http tool lookup", "X-Api-Key: environment variable ABSENT_TOKEN_FOR_TEST is not set", "X-Other: environment variable EMPTY_TOKEN is empty"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "value-that-must-not-leak") {
		t.Errorf("error %q leaks a header value", msg)
	}
}

func TestNew_refuses_a_bad_url_and_method(t *testing.T) {
	_, err := httptool.New("x", config.HTTPExecutor{URL: "ftp://example.com", Method: "TRACE"})
	if err == nil || !strings.Contains(err.Error(), `"ftp://example.com" is not an absolute http or https URL`) || !strings.Contains(err.Error(), `method "TRACE"`) {
		t.Fatalf("error = %v", err)
	}
}

func TestExecute_follows_redirects_within_the_same_host_only(t *testing.T) {
	t.Setenv("LOOKUP_TOKEN", "s3cret")
	elsewhere, elsewhereGot := endpoint(t, answer(200, "application/json", `{"from":"elsewhere"}`))
	var srvURL string
	srv, got := endpoint(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/old":
			http.Redirect(w, r, srvURL+"/new", http.StatusTemporaryRedirect)
		case "/away":
			http.Redirect(w, r, elsewhere.URL+"/x", http.StatusFound)
		default:
			answer(200, "application/json", `{"from":"new"}`)(w, r)
		}
	})
	srvURL = srv.URL
	headers := map[string]string{"X-Api-Key": "LOOKUP_TOKEN"}

	out, err := newTool(t, config.HTTPExecutor{URL: srv.URL + "/old", HeadersEnv: headers}).Execute(context.Background(), call(`{"a":1}`, 1))
	if err != nil || string(out) != `{"from":"new"}` {
		t.Fatalf("same-host redirect: %s, %v", out, err)
	}
	if reqs := got(); len(reqs) != 2 || reqs[1].Body != `{"a":1}` || reqs[1].Header.Get("X-Api-Key") != "s3cret" {
		t.Fatalf("the redirected request lost its body or headers: %+v", reqs)
	}

	_, err = newTool(t, config.HTTPExecutor{URL: srv.URL + "/away", HeadersEnv: headers}).Execute(context.Background(), call(`{}`, 1))
	var se *httptool.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusFound {
		t.Fatalf("cross-host redirect: %v, want HTTP 302", err)
	}
	if n := len(elsewhereGot()); n != 0 {
		t.Fatalf("the other host got %d requests, want none", n)
	}
}
