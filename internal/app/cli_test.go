package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/cli"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// stepwiseCLI runs a client command and returns its exit code and output.
func stepwiseCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := cli.Main(ctx, args, &out, &errs)
	return code, out.String(), errs.String()
}

// The command-line client against a gateway with API keys: a batch
// submitted and followed to its results, runs listed and read, a parked
// call found in pending and decided, a run watched to its end, and errors
// and misuse answered with one line and their exit codes.
func TestCLI_submit_follow_list_pending_decide_watch(t *testing.T) {
	t.Setenv("STEPWISE_TEST_CLI_KEY", "cli-key-123456")
	stack := connect(t, newInfra(t), parseConfig(t, approvalsConfig+`auth: {keys: [{name: ops, key_env: STEPWISE_TEST_CLI_KEY, scopes: [admin]}]}
`))
	workers(t, stack)
	base := serve(t, stack)
	t.Setenv(cli.EnvGateway, base)
	t.Setenv(cli.EnvAPIKey, "cli-key-123456")

	// submit: 30 runs, followed to their ends.
	var lines []string
	for i := range 1000 {
		b, _ := json.Marshal(map[string]any{"run_id": fmt.Sprintf("cli-%04d", i), "agent": "approvals", "input": "go",
			"model": json.RawMessage(script(call("E", "echo", `{"i":1}`)))})
		lines = append(lines, string(b))
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "runs.jsonl"), filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := stepwiseCLI(t, "submit", in, "--follow", "--out", out)
	if code != cli.ExitOK || !strings.Contains(errs, "submitted ["+strings.Repeat("#", 30)+"] 1000/1000") || !strings.Contains(errs, "] 1000/1000") {
		t.Fatalf("submit: exit %d\n%s", code, errs)
	}
	results, _ := os.ReadFile(out)
	if n := strings.Count(string(results), "\n"); n != 1000 || !strings.Contains(string(results), `"status":"done"`) {
		t.Fatalf("%d result lines:\n%s", n, results)
	}

	// runs list and get.
	if code, stdout, _ := stepwiseCLI(t, "runs", "list", "--status", "done", "--limit", "5"); code != cli.ExitOK ||
		!strings.Contains(stdout, "RUN") || strings.Count(stdout, "natural_end") != 5 || !strings.Contains(stdout, "more: --cursor") {
		t.Fatalf("runs list: %d\n%s", code, stdout)
	}
	if code, stdout, _ := stepwiseCLI(t, "runs", "get", "cli-0007"); code != cli.ExitOK || !strings.Contains(stdout, `"run_id": "cli-0007"`) {
		t.Fatalf("runs get: %d\n%s", code, stdout)
	}

	// A parked call: pending lists it, decide resumes it, watch sees the end.
	id := createRunWithKey(t, base, "cli-park", script(call("A", "tool_a", `{"n":1}`)))
	waitForKey(t, base, id, pipeline.RunWaiting)
	if code, stdout, _ := stepwiseCLI(t, "pending", "--run", id); code != cli.ExitOK || !strings.Contains(stdout, "cli-park  A") {
		t.Fatalf("pending: %d\n%s", code, stdout)
	}
	watched := make(chan string, 1)
	go func() { _, stdout, _ := stepwiseCLI(t, "runs", "watch", id); watched <- stdout }()
	if code, stdout, errs := stepwiseCLI(t, "decide", id, "A", "--resume", "--reason", "fine"); code != cli.ExitOK || !strings.Contains(stdout, "accepted") {
		t.Fatalf("decide: %d\n%s%s", code, stdout, errs)
	}
	select {
	case events := <-watched:
		if !strings.Contains(events, "decision.applied") || !strings.Contains(events, `run.finished step 1 {"reason":"natural_end"}`) {
			t.Fatalf("watch:\n%s", events)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runs watch did not end with the run")
	}

	// Errors: one line and exit 1; misuse: exit 2.
	if code, _, errs := stepwiseCLI(t, "runs", "get", "nope"); code != cli.ExitFail ||
		!strings.HasPrefix(errs, "stepwise runs: the gateway answered 404 not_found: run nope: not found") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("get an unknown run: %d %q", code, errs)
	}
	t.Setenv(cli.EnvAPIKey, "wrong")
	if code, _, errs := stepwiseCLI(t, "runs", "list"); code != cli.ExitFail || !strings.Contains(errs, "401 unauthorized") {
		t.Fatalf("a wrong key: %d %q", code, errs)
	}
	for _, args := range [][]string{{"decide", id, "A"}, {"runs", "frob"}, {"submit"}, {"runs", "get"}, {"bogus"}} {
		if code, _, _ := stepwiseCLI(t, args...); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, cli.ExitUsage)
		}
	}
}

// createRunWithKey creates a run through the gateway with the client's key.
func createRunWithKey(t *testing.T, base, id, model string) string {
	t.Helper()
	body := map[string]any{"run_id": id, "agent": "approvals", "input": "go", "model": json.RawMessage(model)}
	if code := keyDo(t, os.Getenv(cli.EnvAPIKey), "POST", base+"/v1/runs", body, nil); code != 201 {
		t.Fatalf("create %s: %d", id, code)
	}
	return id
}

func waitForKey(t *testing.T, base, id string, status pipeline.RunStatus) {
	t.Helper()
	var v runView
	testinfra.Eventually(t, 30*time.Second, func() bool {
		keyDo(t, os.Getenv(cli.EnvAPIKey), "GET", base+"/v1/runs/"+id, nil, &v)
		return v.Status == status
	}, func() string { return id + " is " + string(v.Status) })
}
