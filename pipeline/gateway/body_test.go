package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// A body with a key twice in one object reads two ways (encoding/json
// keeps the last value, other readers the first): every route refuses it,
// naming the key, and nothing is created or published.
func TestBody_a_key_twice_in_an_object_is_refused_naming_it(t *testing.T) {
	h := newHarness(t)
	h.createRun(`{"run_id":"r","agent":"assistant","input":"hi"}`)
	cases := []struct {
		name, path, contentType, body, key string
	}{
		{"a decision", "/v1/runs/r/decisions", "application/json", `{"call_id":"c-1","action":"resume","action":"cancel"}`, "action"},
		{"a run", "/v1/runs", "application/json", `{"run_id":"twice","agent":"assistant","agent":"helper","input":"hi"}`, "agent"},
		{"a key spelled with an escape", "/v1/runs", "application/json", `{"run_id":"twice","agent":"assistant","input":"hi","metadata":{"a":1,"\u0061":2}}`, "a"},
		{"a nested object", "/v1/runs", "application/json", `{"run_id":"twice","agent":"assistant","input":[{"role":"user","content":"a","content":"b"}]}`, "content"},
		{"a batch item", "/v1/runs/batch", "application/x-ndjson", "{\"run_id\":\"twice\",\"agent\":\"assistant\",\"input\":\"hi\"}\n{\"run_id\":\"twice-2\",\"input\":\"a\",\"input\":\"b\"}", "input"},
		{"a cancel", "/v1/runs/r/cancel", "application/json", `{"reason":"a","reason":"b"}`, "reason"},
		{"a chat", "/v1/ai-sdk/chat", "application/json", `{"id":"twice","id":"r","agent":"assistant","messages":[]}`, "id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.do(http.MethodPost, c.path, c.contentType, []byte(c.body)).
				wantError(t, http.StatusBadRequest, gateway.CodeInvalidRequest, `key "`+c.key+`" appears twice`, "at offset")
		})
	}
	if got := h.decisions.of("r"); len(got) != 0 {
		t.Errorf("a refused body published decisions: %+v", got)
	}
	for _, id := range []string{"twice", "twice-2"} {
		if _, err := h.store.GetRun(context.Background(), id); err == nil {
			t.Errorf("a refused body created run %s", id)
		}
	}
	// The same key in two objects is two keys.
	h.createRun(`{"run_id":"once","agent":"assistant","input":[{"role":"user","content":"a"},{"role":"user","content":"b"}],"metadata":{"input":"x"}}`)
}

// Bytes that are not UTF-8 are refused with where they are, not read as
// U+FFFD.
func TestBody_that_is_not_UTF_8_is_refused_with_the_offset(t *testing.T) {
	h := newHarness(t)
	h.do(http.MethodPost, "/v1/runs", "application/json", []byte("{\"run_id\":\"latin1\",\"agent\":\"assistant\",\"input\":\"caf\xe9\"}")).
		wantError(t, http.StatusBadRequest, gateway.CodeInvalidRequest, "not UTF-8", "byte 0xe9", "at offset 51")
	if _, err := h.store.GetRun(context.Background(), "latin1"); err == nil {
		t.Error("a refused body created its run")
	}
	// U+FFFD itself, sent as UTF-8, is text like any other.
	h.createRun("{\"run_id\":\"fffd\",\"agent\":\"assistant\",\"input\":\"\xef\xbf\xbd\"}")
}

// A body that stops halfway gets a 408 on the connection, with the error
// envelope, whether the server's write timeout equals its read timeout
// (as the defaults do) or is shorter.
func TestBody_that_stalls_is_answered_408(t *testing.T) {
	for _, c := range []struct {
		name        string
		read, write time.Duration
	}{
		{"equal timeouts", 500 * time.Millisecond, 500 * time.Millisecond},
		{"a shorter write timeout", time.Second, 200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			hs := httptest.NewUnstartedServer(h.handler)
			hs.Config.ReadTimeout, hs.Config.WriteTimeout = c.read, c.write
			hs.Start()
			t.Cleanup(hs.Close)
			conn, err := net.Dial("tcp", hs.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = conn.Close() })
			if _, err := io.WriteString(conn, "POST /v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"agent\":"); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), gateway.CodeRequestTimeout) {
				t.Fatalf("a stalled body: %d %s, want 408 %s", res.StatusCode, body, gateway.CodeRequestTimeout)
			}
		})
	}
}

// Every answer, whatever its route and status, tells browsers not to
// guess its type.
func TestEvery_answer_says_nosniff(t *testing.T) {
	h := newHarness(t)
	h.createRun(`{"run_id":"done","agent":"assistant","input":"hi"}`)
	if _, err := h.store.FinishRun(context.Background(), "done", pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/healthz", "/v1/runs", "/v1/runs/done", "/v1/runs/done/events", "/v1/runs/nope", "/nope", "/", "/console/app.js", "/v1/ai-sdk/chat/nope/stream"} {
		if got := h.get(path).header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q", path, got)
		}
	}
	if got := h.post("/v1/runs", `{"agent":"assistant","input":"hi"}`).header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("POST /v1/runs: X-Content-Type-Options %q", got)
	}
}
