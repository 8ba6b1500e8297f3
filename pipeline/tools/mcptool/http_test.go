package mcptool_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/tools/mcptool"
)

type sumIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type sumOut struct {
	Sum float64 `json:"sum"`
}

// newHTTPServer returns an MCP server with a "get-sum" tool and a "session"
// tool that returns the id of the session calling it.
func newHTTPServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "get-sum", Description: "Returns a + b."},
		func(_ context.Context, _ *mcp.CallToolRequest, in sumIn) (*mcp.CallToolResult, sumOut, error) {
			return nil, sumOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "session", Description: "Returns the caller's session id."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Session.ID()}}}, nil, nil
		})
	return s
}

// restartable is an HTTP endpoint whose MCP server can be replaced by a fresh
// one, which forgets every session: what a restarted remote server looks
// like to its clients.
type restartable struct {
	srv     *httptest.Server
	current atomic.Pointer[mcp.Server]
	handler atomic.Pointer[mcp.StreamableHTTPHandler]
}

func newRestartable(t *testing.T) *restartable {
	t.Helper()
	r := &restartable{}
	r.restart()
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.handler.Load().ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *restartable) restart() {
	s := newHTTPServer()
	r.current.Store(s)
	r.handler.Store(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	if r.srv != nil {
		r.srv.CloseClientConnections() // the old server's streams end with it
	}
}

func TestManager_speaks_streamable_HTTP(t *testing.T) {
	remote := newRestartable(t)
	m := newManager(t, map[string]config.MCPServer{"remote": {URL: remote.srv.URL}})
	if spec, ok := m.Specs()[mcptool.Key("remote", "get-sum")]; !ok || spec.Description != "Returns a + b." {
		t.Fatalf("Specs = %v", m.Specs())
	}
	got, err := call(t, tool(t, m, "remote", "get-sum"), `{"a": 40, "b": 2}`)
	if err != nil || got != `{"sum":42}` {
		t.Fatalf("get-sum = %s, %v", got, err)
	}
}

func TestManager_reconnects_when_a_remote_server_restarts(t *testing.T) {
	remote := newRestartable(t)
	m := newManager(t, map[string]config.MCPServer{"remote": {URL: remote.srv.URL}})
	session := tool(t, m, "remote", "session")
	first, err := call(t, session, `{}`)
	if err != nil {
		t.Fatal(err)
	}

	remote.restart()
	eventually(t, "calls go through a new session", func() (bool, string) {
		got, err := call(t, session, `{}`)
		if err != nil && !isUnavailable(err) {
			t.Fatalf("a call during the reconnect failed uncleanly: %v", err)
		}
		return err == nil && got != first, got + " " + errString(err)
	})
}

func TestManager_relists_tools_when_the_server_says_they_changed(t *testing.T) {
	remote := newRestartable(t)
	m := newManager(t, map[string]config.MCPServer{"remote": {URL: remote.srv.URL}})
	remote.current.Load().AddTool(&mcp.Tool{Name: "late", Description: "Added while running.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "here"}}}, nil
		})
	eventually(t, "the new tool is listed", func() (bool, string) {
		_, ok := m.Specs()[mcptool.Key("remote", "late")]
		return ok, "no remote/late"
	})
	if got, err := call(t, tool(t, m, "remote", "late"), `{}`); err != nil || got != `"here"` {
		t.Fatalf("late = %s, %v", got, err)
	}
}

func TestManager_reports_a_remote_server_that_went_away(t *testing.T) {
	remote := newRestartable(t)
	m := newManager(t, map[string]config.MCPServer{"remote": {URL: remote.srv.URL}}, mcptool.WithKeepAlive(20*time.Millisecond))
	if _, err := call(t, tool(t, m, "remote", "get-sum"), `{"a": 1, "b": 1}`); err != nil {
		t.Fatal(err)
	}
	remote.srv.Close()
	if _, err := call(t, tool(t, m, "remote", "get-sum"), `{"a": 1, "b": 1}`); !isUnavailable(err) {
		t.Fatalf("call to a closed server = %v, want unavailable", err)
	}
	eventually(t, "the server is reported unavailable", func() (bool, string) {
		err := m.Unavailable()["remote"]
		return isUnavailable(err), errString(err)
	})
}
