package app_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/cli"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// versionsConfig is a deployment whose agent clerk offers approve and
// old_tool; changedTools is the same with old_tool swapped for new_tool
// in clerk's tool set (both tools stay defined, so the tool workers of
// either configuration can run them).
const versionsConfig = `
kafka: {partitions: 4}
stepworker: {lease: 1s, sweep_interval: 100ms, dispatch_timeout: 3s, max_attempts: 3}
toolworker: {lease: 1s, default_timeout: 10s}
agents:
  clerk:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [approve, old_tool]
tools:
  approve: {executor: {builtin: echo}, permission: ask}
  old_tool: {executor: {builtin: echo}}
  new_tool: {executor: {builtin: echo}}
`

func changedTools() string {
	return strings.Replace(versionsConfig, "tools: [approve, old_tool]", "tools: [approve, new_tool]", 1)
}

// parkThenOldTool is a run's script: a call that parks for approval, then
// after it a call of old_tool, then the answer.
func parkThenOldTool(n int) string {
	return fmt.Sprintf(`{"provider":"script","turns":[`+
		`{"text":"asking","tool_calls":[{"id":"A","name":"approve","arguments":{"n":%d}}]},`+
		`{"text":"using","tool_calls":[{"id":"O","name":"old_tool","arguments":{"n":%d}}]},`+
		`{"text":"done"}]}`, n, n)
}

// listCount is how many runs of agent GET /v1/runs lists with status.
func listCount(t *testing.T, base, agent string, status pipeline.RunStatus) int {
	t.Helper()
	var out struct {
		Runs []struct{} `json:"runs"`
	}
	if code := httpDo(t, http.MethodGet, fmt.Sprintf("%s/v1/runs?agent=%s&status=%s&limit=500", base, agent, status), nil, &out); code != http.StatusOK {
		t.Fatalf("list runs: status %d", code)
	}
	return len(out.Runs)
}

// The check: an agent's tool set changes (every process restarted
// with the new configuration) while 100 runs are parked. After their
// decisions they finish on the version they started with — old_tool, no
// longer in clerk's tool set, is still offered to them and runs — and a
// new run uses the new version: new_tool runs, old_tool is refused.
func TestVersions_runs_parked_across_a_tool_set_change_finish_on_their_version(t *testing.T) {
	const n = 100
	in := newInfra(t)
	before := connect(t, in, parseConfig(t, versionsConfig))
	stopStep := start(t, before.RunStepWorker)
	stopTools := start(t, func(ctx context.Context) error { return before.RunToolWorker(ctx, nil) })
	oldBase := serve(t, before)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = createRun(t, oldBase, fmt.Sprintf("r-parked-%d", i), "clerk", parkThenOldTool(i))
	}
	testinfra.Eventually(t, 60*time.Second, func() bool { return listCount(t, oldBase, "clerk", pipeline.RunWaiting) == n },
		func() string {
			return fmt.Sprintf("%d of %d runs waiting", listCount(t, oldBase, "clerk", pipeline.RunWaiting), n)
		})
	started := getRun(t, oldBase, ids[0]).AgentVersion
	if started == "" {
		t.Fatal("a new run has no agent_version")
	}

	// A deploy: the workers and the gateway restart with clerk's new tool set.
	stopStep()
	stopTools()
	changed := parseConfig(t, changedTools())
	after := connect(t, in, changed)
	workers(t, after)
	base := serve(t, after)
	// stepwise agents shows both versions: the new one current, the old
	// one with its 100 runs.
	t.Setenv(cli.EnvGateway, base)
	code, stdout, _ := stepwiseCLI(t, "agents")
	vs, err := versions.New(changed, after.Store)
	if err != nil {
		t.Fatal(err)
	}
	current, _ := vs.Current("clerk")
	if code != cli.ExitOK || !regexp.MustCompile(`clerk\s+`+started+`\s+-\s+100\n`).MatchString(stdout) ||
		!regexp.MustCompile(`clerk\s+`+current.Hash+`\s+yes\s+0\n`).MatchString(stdout) {
		t.Fatalf("stepwise agents: exit %d\n%s", code, stdout)
	}
	for _, id := range ids {
		decide(t, base, id, map[string]any{"decision_id": "ok-" + id, "call_id": "A", "action": "resume"})
	}
	testinfra.Eventually(t, 90*time.Second, func() bool { return listCount(t, base, "clerk", pipeline.RunDone) == n },
		func() string {
			return fmt.Sprintf("%d of %d runs done", listCount(t, base, "clerk", pipeline.RunDone), n)
		})
	for i, id := range ids {
		v := getRun(t, base, id)
		assertNaturalEnd(t, v, 2)
		if v.AgentVersion != started {
			t.Fatalf("run %s is on version %q, want %q, the one it started with", id, v.AgentVersion, started)
		}
		if c := callOf(v, "O"); c.Status != pipeline.CallSucceeded || c.Error != "" || canonical(t, c.Result) != canonical(t, map[string]any{"n": i}) {
			t.Fatalf("run %s: old_tool, in the version it started with, did not run: %+v", id, c)
		}
	}

	fresh := createRun(t, base, "r-new", "clerk", script(call("N", "new_tool", `{"x":1}`), call("O", "old_tool", `{"x":2}`)))
	v := waitDone(t, base, fresh, 30*time.Second)
	if v.AgentVersion == "" || v.AgentVersion == started {
		t.Fatalf("a new run is on version %q; want the new configuration's, not %q", v.AgentVersion, started)
	}
	if c := callOf(v, "N"); c.Status != pipeline.CallSucceeded || c.Error != "" {
		t.Fatalf("new_tool on the new version: %+v", c)
	}
	if c := callOf(v, "O"); !strings.Contains(c.Error, "not available") {
		t.Fatalf("old_tool on the new version: %+v; want it refused", c)
	}
}

// A run whose version's definition is gone from Redis ends with an error
// that says so when its decision arrives at a worker that never saw that
// version: it does not go on under the worker's configuration.
func TestVersions_a_run_whose_version_is_lost_ends_with_an_error(t *testing.T) {
	in := newInfra(t)
	before := connect(t, in, parseConfig(t, versionsConfig))
	stopStep := start(t, before.RunStepWorker)
	start(t, func(ctx context.Context) error { return before.RunToolWorker(ctx, nil) })
	base := serve(t, before)
	id := createRun(t, base, "r-lost", "clerk", parkThenOldTool(1))
	v := waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	stopStep()
	if err := before.Redis.Del(context.Background(), store.DefaultPrefix+":agentver:"+v.AgentVersion).Err(); err != nil {
		t.Fatal(err)
	}

	after := connect(t, in, parseConfig(t, changedTools()))
	start(t, after.RunStepWorker)
	decide(t, base, id, map[string]any{"decision_id": "ok", "call_id": "A", "action": "resume"})
	v = waitDone(t, base, id, 30*time.Second)
	if v.Termination.Reason != pipeline.ReasonError || !strings.Contains(v.Termination.Detail, "agent version lost") ||
		!strings.Contains(v.Termination.Detail, v.AgentVersion) {
		t.Fatalf("run ended %+v; want an error naming its lost version %s", v.Termination, v.AgentVersion)
	}
	for _, e := range eventsOf(runEvents(t, after, id), pipeline.EventToolCallStarted) {
		t.Fatalf("a tool ran after the version was lost: %+v", e)
	}
}

// stepwise agents upgrade moves an agent's waiting runs to its current
// version, explicitly: their decisions are then judged, and their next
// steps run, by the new tool set (old_tool is refused), and run.upgraded
// records the move.
func TestVersions_agents_upgrade_moves_the_waiting_runs_to_the_current_version(t *testing.T) {
	in := newInfra(t)
	before := connect(t, in, parseConfig(t, versionsConfig))
	stopStep := start(t, before.RunStepWorker)
	oldBase := serve(t, before)
	ids := []string{"r-up-0", "r-up-1", "r-up-2"}
	for i, id := range ids {
		createRun(t, oldBase, id, "clerk", parkThenOldTool(i))
	}
	testinfra.Eventually(t, 30*time.Second, func() bool { return listCount(t, oldBase, "clerk", pipeline.RunWaiting) == len(ids) },
		func() string {
			return fmt.Sprintf("%d runs waiting", listCount(t, oldBase, "clerk", pipeline.RunWaiting))
		})
	started := getRun(t, oldBase, ids[0]).AgentVersion
	stopStep()

	after := connect(t, in, parseConfig(t, changedTools()))
	workers(t, after)
	base := serve(t, after)
	t.Setenv(cli.EnvGateway, base)
	code, stdout, _ := stepwiseCLI(t, "agents", "upgrade", "clerk")
	if code != cli.ExitOK || !strings.HasPrefix(stdout, "3 waiting runs of clerk moved to version ") {
		t.Fatalf("stepwise agents upgrade: exit %d: %s", code, stdout)
	}
	if code, stdout, _ = stepwiseCLI(t, "agents", "upgrade", "clerk"); code != cli.ExitOK || !strings.HasPrefix(stdout, "0 waiting runs") {
		t.Fatalf("a second upgrade: exit %d: %s", code, stdout)
	}
	for _, id := range ids {
		decide(t, base, id, map[string]any{"decision_id": "ok-" + id, "call_id": "A", "action": "resume"})
	}
	for _, id := range ids {
		v := waitDone(t, base, id, 30*time.Second)
		if v.AgentVersion == started || v.AgentVersion == "" {
			t.Fatalf("run %s is on version %q; want the new one", id, v.AgentVersion)
		}
		if c := callOf(v, "O"); !strings.Contains(c.Error, "not available") {
			t.Fatalf("run %s: old_tool after the upgrade: %+v; want it refused", id, c)
		}
		up := eventsOf(runEvents(t, after, id), pipeline.EventRunUpgraded)
		if len(up) != 1 || !strings.Contains(string(up[0].Data), started) || !strings.Contains(string(up[0].Data), v.AgentVersion) {
			t.Fatalf("run %s: run.upgraded events %+v", id, up)
		}
	}
}
