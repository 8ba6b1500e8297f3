package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/tools"
	"github.com/stepwise-run/stepwise/pipeline/tools/mcptool"
)

// serverBin is the test MCP server (testdata/mcpserver), built by TestMain.
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcptool-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "mcpserver")
	build := exec.Command("go", "build", "-o", serverBin, "./testdata/mcpserver")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the test MCP server:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// waitFor is how long a condition is polled before the test fails. It is a
// bound on a hang, not a measure of speed.
const waitFor = 30 * time.Second

// eventually waits up to waitFor for cond (testinfra.Eventually); cond says
// what it saw last, for the failure message.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var saw string
	testinfra.Eventually(t, waitFor, func() bool {
		ok, last := cond()
		saw = last
		return ok
	}, func() string { return what + "; last saw " + saw })
}

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newManager starts a manager with fast restarts, closed when t ends.
func newManager(t *testing.T, servers map[string]config.MCPServer, opts ...mcptool.Option) *mcptool.Manager {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	opts = append([]mcptool.Option{mcptool.WithLogger(testLogger()), mcptool.WithBackoff(10*time.Millisecond, 200*time.Millisecond)}, opts...)
	m, err := mcptool.New(ctx, servers, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func stdio(args ...string) config.MCPServer {
	return config.MCPServer{Command: append([]string{serverBin}, args...)}
}

func tool(t *testing.T, m *mcptool.Manager, server, name string) tools.Tool {
	t.Helper()
	tl, ok := m.Tool(server, name)
	if !ok {
		t.Fatalf("no tool %s/%s", server, name)
	}
	return tl
}

func call(t *testing.T, tl tools.Tool, args string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	out, err := tl.Execute(ctx, tools.Call{RunID: "r-1", CallID: "c-1", Attempt: 1, Arguments: json.RawMessage(args)})
	return string(out), err
}

// isUnavailable reports whether err is the clean failure of a call to a
// server that is down.
func isUnavailable(err error) bool {
	var ue *mcptool.UnavailableError
	return errors.As(err, &ue) && errors.Is(err, mcptool.ErrUnavailable)
}
