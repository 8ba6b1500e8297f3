package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// slowEnds records what a slow tool's server saw of a call's end.
type slowEnds struct {
	httpAborted  atomic.Bool // the HTTP tool's request ended before its answer
	mcpStopped   atomic.Bool // the MCP tool's handler saw its context end
	mcpCancelled atomic.Bool // the MCP server got notifications/cancelled
}

// slowHTTP is an HTTP tool's server that answers after a minute, or notes
// that its request was aborted first. Its cleanup lets a request still
// waiting go before it closes.
func slowHTTP(t *testing.T, ends *slowEnds) string {
	t.Helper()
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // read whole, so the server watches the connection
		select {
		case <-r.Context().Done():
			ends.httpAborted.Store(true)
		case <-release:
		case <-time.After(time.Minute):
			fmt.Fprint(w, `{"late":true}`)
		}
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(release) })
	return hs.URL
}

// slowMCP is a streamable-HTTP MCP server whose tool "wait" answers after
// a minute, or notes that its context ended first; the server notes the
// notifications/cancelled it is sent.
func slowMCP(t *testing.T, ends *slowEnds) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "Answers after a minute."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
				ends.mcpStopped.Store(true)
				return nil, nil, ctx.Err()
			case <-time.After(time.Minute):
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil, nil
			}
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
			ends.mcpCancelled.Store(true)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// A run cancelled while its tool runs stops the tool, whatever executes
// it: the builtin sleep returns, the HTTP tool's request is aborted, the
// MCP server is sent notifications/cancelled and its handler's context
// ends. The call ends cancelled with nothing of the tool's written, the
// run ends cancelled, and the stop is counted. Each tool would run a
// minute (its timeout too): only the cancel can stop it within the test.
func TestCancel_stops_the_tool_a_cancelled_run_is_running(t *testing.T) {
	var ends slowEnds
	cfg := parseConfig(t, fmt.Sprintf(`
kafka: {partitions: 4}
stepworker: {lease: 1s, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 1s, default_timeout: 1m}
mcp_servers:
  slow: {url: %q}
agents:
  slow:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [sleep, fetch, wait]
tools:
  fetch: {executor: {http: {url: %q}}, parameters: {type: object}}
  wait: {executor: {mcp: {server: slow}}}
`, slowMCP(t, &ends), slowHTTP(t, &ends)))
	stack := connect(t, newInfra(t), cfg)
	workers(t, stack)
	base := serve(t, stack)
	waitForCatalog(t, stack, "wait")

	for _, tc := range []struct {
		tool, args string
		stopped    func() bool // what the tool's server saw, if it has one
	}{
		{"sleep", `{"ms":60000}`, func() bool { return true }},
		{"fetch", `{}`, ends.httpAborted.Load},
		{"wait", `{}`, func() bool { return ends.mcpStopped.Load() && ends.mcpCancelled.Load() }},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			id := createRun(t, base, "r-cancel-"+tc.tool, "slow", script(call("C", tc.tool, tc.args)))
			waitFor(t, base, id, "C running", func(v runView) bool { return callOf(v, "C").Status == pipeline.CallRunning })
			if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+id+"/cancel", map[string]any{"reason": "changed my mind"}, nil); code != http.StatusAccepted {
				t.Fatalf("cancel: %d", code)
			}
			testinfra.Eventually(t, 5*time.Second, tc.stopped, func() string { return "the tool's server never saw the call end" })
			scrapeUntil(t, base, fmt.Sprintf(`stepwise_tool_calls_stopped_total{tool=%q} 1`, tc.tool))
			v := waitDone(t, base, id, 5*time.Second)
			if v.Termination.Reason != pipeline.ReasonCancelled {
				t.Fatalf("termination %+v, want cancelled", v.Termination)
			}
			if c := callOf(v, "C"); c.Status != pipeline.CallCancelled || len(c.Result) != 0 {
				t.Fatalf("C: %+v, want cancelled without a result", c)
			}
			if n := len(eventsOf(runEvents(t, stack, id), pipeline.EventToolCallFinished)); n != 1 {
				t.Fatalf("%d tool_call.finished events, want the cancel's alone", n)
			}
		})
	}
}
