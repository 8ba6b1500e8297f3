package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/tools"
	"github.com/stepwise-run/stepwise/pipeline/tools/mcptool"
)

func TestManager_lists_the_tools_of_a_stdio_server(t *testing.T) {
	m := newManager(t, map[string]config.MCPServer{"local": stdio()})
	if down := m.Unavailable(); len(down) != 0 {
		t.Fatalf("Unavailable = %v", down)
	}
	specs := m.Specs()
	add, ok := specs[mcptool.Key("local", "add")]
	if !ok {
		t.Fatalf("Specs = %v, want local/add", specs)
	}
	if add.Server != "local" || add.Tool != "add" || add.Description != "Adds two numbers." {
		t.Fatalf("add = %+v", add)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(add.InputSchema, &schema); err != nil {
		t.Fatalf("input schema %s: %v", add.InputSchema, err)
	}
	if schema.Type != "object" || schema.Properties["a"] == nil || schema.Properties["b"] == nil {
		t.Fatalf("input schema = %s", add.InputSchema)
	}
	for _, name := range []string{"echo", "fail", "pid", "meta", "parts", "sleep"} {
		if _, ok := specs[mcptool.Key("local", name)]; !ok {
			t.Errorf("Specs lack local/%s", name)
		}
	}
}

func TestTool_maps_the_result(t *testing.T) {
	m := newManager(t, map[string]config.MCPServer{"local": stdio()})
	cases := []struct {
		name, tool, args, want, wantErr string
	}{
		{"structured content is the result", "add", `{"a": 2, "b": 3.5}`, `{"sum":5.5}`, ""},
		{"text content becomes a JSON string", "echo", `{"text": "hi \"there\""}`, `"hi \"there\""`, ""},
		{"text parts are joined and others named", "parts", `{}`, `"first\n[image image/png, 3 bytes]\nsecond"`, ""},
		{"empty arguments are an empty object", "pid", ``, "", ""},
		{"isError is a tool error with the text", "fail", `{"text": "card declined"}`, "", "card declined"},
		{"an unlisted tool is a tool error naming the listed ones", "nope", `{}`, "", `MCP server local has no tool "nope" (it has: add, broken, echo, fail, meta, parts, pid, sleep)`},
		{"a protocol error is a tool error naming server and tool", "broken", `{}`, "", "MCP server local: tool broken: database is down"},
		{"arguments that are not an object are refused", "echo", `[1]`, "", "arguments must be a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := call(t, tool(t, m, "local", c.tool), c.args)
			switch {
			case c.wantErr != "":
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("error = %v, want %q", err, c.wantErr)
				}
				if isUnavailable(err) {
					t.Fatalf("a tool error is reported as unavailability: %v", err)
				}
			case err != nil:
				t.Fatalf("error = %v", err)
			case c.want != "" && got != c.want:
				t.Fatalf("result = %s, want %s", got, c.want)
			}
		})
	}
}

func TestTool_invalid_params_are_a_tool_error(t *testing.T) {
	m := newManager(t, map[string]config.MCPServer{"local": stdio()})
	_, err := call(t, tool(t, m, "local", "add"), `{"a": "two", "b": 3}`)
	if err == nil || isUnavailable(err) {
		t.Fatalf("error = %v, want a tool error", err)
	}
	if !strings.Contains(err.Error(), `want "number"`) {
		t.Fatalf("error %q does not name the argument", err)
	}
}

func TestTool_sends_the_idempotency_key_and_attempt_in_meta(t *testing.T) {
	m := newManager(t, map[string]config.MCPServer{"local": stdio()})
	out, err := tool(t, m, "local", "meta").Execute(context.Background(),
		tools.Call{RunID: "r-9", CallID: "c-3", Attempt: 2, Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(out, &meta); err != nil {
		t.Fatalf("result %s: %v", out, err)
	}
	if meta[mcptool.MetaIdempotencyKey] != "r-9:c-3" || meta[mcptool.MetaAttempt] != 2.0 {
		t.Fatalf("_meta = %v", meta)
	}
}

func TestTool_returns_when_the_call_is_cancelled(t *testing.T) {
	m := newManager(t, map[string]config.MCPServer{"local": stdio()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tool(t, m, "local", "sleep").Execute(ctx, tools.Call{Arguments: json.RawMessage(`{"ms": 3600000}`)})
	if !errors.Is(err, context.Canceled) || isUnavailable(err) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if _, err := call(t, tool(t, m, "local", "echo"), `{"text":"still here"}`); err != nil {
		t.Fatalf("the server is unusable after a cancelled call: %v", err)
	}
}

func TestManager_Tool_of_an_unknown_server_is_not_found(t *testing.T) {
	m := newManager(t, map[string]config.MCPServer{"local": stdio()})
	if _, ok := m.Tool("elsewhere", "add"); ok {
		t.Fatal("Tool found a tool of an unknown server")
	}
}

func pidOf(t *testing.T, tl tools.Tool) (int, error) {
	t.Helper()
	out, err := call(t, tl, `{}`)
	if err != nil {
		return 0, err
	}
	var s string
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("pid result %s: %v", out, err)
	}
	return strconv.Atoi(s)
}

func TestManager_restarts_a_server_whose_process_dies(t *testing.T) {
	m := newManager(t, map[string]config.MCPServer{"local": stdio()})
	pid := tool(t, m, "local", "pid")
	first, err := pidOf(t, pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new process answers", func() (bool, string) {
		p, err := pidOf(t, pid)
		if err != nil && !isUnavailable(err) {
			t.Fatalf("a call during the restart failed uncleanly: %v", err)
		}
		return err == nil && p != first, "pid " + strconv.Itoa(p) + ", error " + errString(err)
	})
}

func TestManager_fails_calls_cleanly_while_a_server_cannot_restart(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, map[string]config.MCPServer{"gated": stdio("-gate", gate)})
	pid := tool(t, m, "gated", "pid")
	first, err := pidOf(t, pid)
	if err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(gate); err != nil { // every restart now exits at once
		t.Fatal(err)
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "calls fail with the reason the restart fails", func() (bool, string) {
		_, err := pidOf(t, pid)
		return isUnavailable(err) &&
			strings.HasPrefix(err.Error(), "MCP server gated unavailable: ") &&
			strings.Contains(err.Error(), "gate closed, refusing to start"), errString(err)
	})
	if err := m.Unavailable()["gated"]; !isUnavailable(err) {
		t.Fatalf("Unavailable()[gated] = %v", err)
	}
	if _, ok := m.Specs()[mcptool.Key("gated", "pid")]; !ok {
		t.Fatal("a server that is down lost the tools it listed")
	}

	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the server is back", func() (bool, string) {
		p, err := pidOf(t, pid)
		return err == nil && p != first, errString(err)
	})
	if down := m.Unavailable(); len(down) != 0 {
		t.Fatalf("Unavailable = %v after the restart", down)
	}
}

func TestManager_Close_stops_the_processes_and_fails_later_calls(t *testing.T) {
	m := newManager(t, map[string]config.MCPServer{"local": stdio()})
	pid := tool(t, m, "local", "pid")
	p, err := pidOf(t, pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(p, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d still exists after Close (kill 0: %v)", p, err)
	}
	_, err = pidOf(t, pid)
	if !isUnavailable(err) || !errors.Is(err, mcptool.ErrClosed) {
		t.Fatalf("call after Close: %v, want unavailable: manager closed", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestManager_keeps_trying_a_server_that_does_not_start(t *testing.T) {
	m := newManager(t, map[string]config.MCPServer{
		"missing": {Command: []string{filepath.Join(t.TempDir(), "no-such-program")}},
		"local":   stdio(),
	})
	err := m.Unavailable()["missing"]
	if !isUnavailable(err) || !strings.Contains(err.Error(), "no-such-program") {
		t.Fatalf("Unavailable()[missing] = %v", err)
	}
	if _, err := call(t, tool(t, m, "missing", "anything"), `{}`); !isUnavailable(err) {
		t.Fatalf("call = %v, want unavailable", err)
	}
	if _, err := call(t, tool(t, m, "local", "pid"), `{}`); err != nil {
		t.Fatalf("a broken server affects another: %v", err)
	}
}

func TestNew_refuses_servers_without_exactly_one_transport(t *testing.T) {
	_, err := mcptool.New(context.Background(), map[string]config.MCPServer{
		"neither": {},
		"both":    {Command: []string{"x"}, URL: "http://127.0.0.1:1/mcp"},
	})
	if err == nil || !strings.Contains(err.Error(), "mcp server neither: set exactly one of command, url; none is set") ||
		!strings.Contains(err.Error(), "mcp server both: set exactly one of command, url; both are set") {
		t.Fatalf("New = %v", err)
	}
}

func TestManager_CatalogSpecs_merges_the_configuration_over_the_server(t *testing.T) {
	m := newManager(t, map[string]config.MCPServer{"local": stdio()})
	got := m.CatalogSpecs(map[string]config.Tool{
		"sum":       {Executor: config.Executor{MCP: &config.MCPExecutor{Server: "local", Tool: "add"}}},
		"say":       {Description: "Say it back.", Parameters: json.RawMessage(`{"type":"object"}`), Executor: config.Executor{MCP: &config.MCPExecutor{Server: "local", Tool: "echo"}}},
		"echo":      {Executor: config.Executor{MCP: &config.MCPExecutor{Server: "local"}}}, // tool name defaults to the key
		"ghost":     {Executor: config.Executor{MCP: &config.MCPExecutor{Server: "local", Tool: "ghost"}}},
		"elsewhere": {Executor: config.Executor{MCP: &config.MCPExecutor{Server: "remote", Tool: "add"}}},
		"builtin":   {Executor: config.Executor{Builtin: "echo"}},
	})
	if len(got) != 3 {
		t.Fatalf("CatalogSpecs = %v, want sum, say, echo", got)
	}
	if s := got["sum"]; s.Name != "sum" || s.Description != "Adds two numbers." || !strings.Contains(string(s.Parameters), `"a"`) {
		t.Fatalf("sum = %+v", s)
	}
	if s := got["say"]; s.Description != "Say it back." || string(s.Parameters) != `{"type":"object"}` {
		t.Fatalf("say = %+v", s)
	}
	if s := got["echo"]; s.Description != "Returns its text." {
		t.Fatalf("echo = %+v", s)
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

func TestManager_stops_the_children_of_a_server_with_it(t *testing.T) {
	m := newManager(t, map[string]config.MCPServer{"parent": stdio("-spawn")})
	child := tool(t, m, "parent", "child")
	pid := tool(t, m, "parent", "pid")

	firstChild, err := pidOf(t, child)
	if err != nil {
		t.Fatal(err)
	}
	first, err := pidOf(t, pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil { // the child is orphaned
		t.Fatal(err)
	}
	gone := func(p int) func() (bool, string) {
		return func() (bool, string) { return exited(p) }
	}
	eventually(t, "the orphaned child of the dead server is stopped", gone(firstChild))

	var secondChild int
	eventually(t, "the server is back with a new child", func() (bool, string) {
		secondChild, err = pidOf(t, child)
		return err == nil && secondChild != firstChild, errString(err)
	})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Close stops the child too", gone(secondChild))
}

// exited reports whether process pid has exited. A zombie has: it only waits
// for its new parent, whoever adopted the orphan, to reap it.
func exited(pid int) (bool, string) {
	if runtime.GOOS == "linux" {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true, ""
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		return len(f) > 0 && f[0] == "Z", "state " + strings.Join(f[:1], "")
	}
	err := syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH), "kill 0: " + errString(err)
}
