package app_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/topics"
)

// buildPrograms builds the worker programs and the stepwise command once
// per test binary.
var buildPrograms = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "stepwise-bin-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", dir, "../../cmd/stepworker", "../../cmd/toolworker", "../../cmd/gateway", "../../cmd/stepwise")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{out: out, err: err}
	}
	return dir, nil
})

type buildError struct {
	out []byte
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + string(e.out) }

func programs(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the programs; skipped with -short")
	}
	dir, err := buildPrograms()
	if err != nil {
		t.Fatalf("build programs: %v", err)
	}
	return dir
}

// process is a worker program running as an OS process.
type process struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

func startProcess(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	p := &process{cmd: cmd, out: out}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), out.String())
		}
	})
	return p
}

func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
}

// writeConfig writes yaml to a file for a program to read, with t's topic
// prefix (testinfra.TopicPrefix) when the yaml names none, as parseConfig
// gives the stacks in t's process.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stepwise.yaml")
	if err := os.WriteFile(path, withTopicPrefix(t, yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// withTopicPrefix sets kafka.topic_prefix of a configuration that names
// none to t's; a configuration that does not parse is returned as it is,
// for the program to refuse.
func withTopicPrefix(t *testing.T, text string) []byte {
	t.Helper()
	prefix := testinfra.TopicPrefix(t)
	var doc map[string]any
	if prefix == topics.DefaultPrefix || yaml.Unmarshal([]byte(text), &doc) != nil || doc == nil {
		return []byte(text)
	}
	k, _ := doc["kafka"].(map[string]any)
	if k == nil {
		k = map[string]any{}
	}
	if _, set := k["topic_prefix"]; set {
		return []byte(text)
	}
	k["topic_prefix"] = prefix
	doc["kafka"] = k
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestProcesses_a_run_completes_with_the_workers_as_separate_processes_even_when_one_is_killed(t *testing.T) {
	bin := programs(t)
	in := newInfra(t)
	cfgPath := writeConfig(t, testConfig)
	stack := connect(t, in, parseConfig(t, testConfig))
	base := serve(t, stack)
	env := []string{app.EnvKafkaBrokers + "=" + strings.Join(in.brokers, ","), app.EnvRedisURL + "=" + in.redisURL}

	startProcess(t, filepath.Join(bin, "stepworker"), env, "--config", cfgPath)
	first := startProcess(t, filepath.Join(bin, "toolworker"), env, "--config", cfgPath)

	id := createRun(t, base, "r-processes", "assistant", threeSteps)
	assertNaturalEnd(t, waitDone(t, base, id, 60*time.Second), 2)
	assertHistory(t, getMessages(t, base, id), threeStepsHistory())

	// A tool worker killed mid-tool (SIGKILL: no chance to clean up).
	slow := `{"provider":"script","turns":[{"text":"slow","tool_calls":[{"name":"sleep","arguments":{"ms":1500}}]},{"text":"done"}]}`
	id = createRun(t, base, "r-killed", "assistant", slow)
	testinfra.Eventually(t, 30*time.Second, func() bool {
		v := getRun(t, base, id)
		return len(v.ToolCalls) == 1 && v.ToolCalls[0].Status == pipeline.CallRunning
	}, func() string { return "the call never ran" })
	first.kill(t)
	// Its replacement is the stepwise command's toolworker: the same program.
	startProcess(t, filepath.Join(bin, "stepwise"), env, "toolworker", "--config", cfgPath, "--queues", "default")
	v := waitDone(t, base, id, 60*time.Second)
	assertNaturalEnd(t, v, 1)
	if v.ToolCalls[0].Status != pipeline.CallSucceeded {
		t.Fatalf("call: %+v", v.ToolCalls[0])
	}
}

func TestProcesses_a_missing_or_unreachable_address_is_a_clear_error_at_start(t *testing.T) {
	bin := programs(t)
	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no kafka and no redis", nil, nil, "no Kafka brokers: pass --kafka host:port or set STEPWISE_KAFKA_BROKERS"},
		{"unreachable redis", nil, []string{"--kafka", "127.0.0.1:1", "--redis", "redis://127.0.0.1:1/0"}, "redis at 127.0.0.1:1 is unreachable"},
		{"unreachable kafka", nil, []string{"--kafka", "127.0.0.1:1", "--redis", newInfra(t).redisURL}, "kafka brokers unreachable: 127.0.0.1:1"},
		{"bad config", nil, []string{"--config", writeConfig(t, "agents: {a: {model: {provider: gpt}}}")}, `agents.a.model.provider`},
		{"a stray argument", nil, []string{"--kafka", "127.0.0.1:1", "default"}, "unexpected arguments: default"},
	}
	for _, c := range cases {
		// The stepworker command, and the same program as the stepwise command's.
		for _, command := range [][]string{{"stepworker"}, {"stepwise", "stepworker"}} {
			t.Run(c.name+"/"+strings.Join(command, " "), func(t *testing.T) {
				cmd := exec.Command(filepath.Join(bin, command[0]), append(command[1:], c.args...)...)
				cmd.Env = append(withoutStepwiseEnv(), c.env...)
				out, err := cmd.CombinedOutput()
				if err == nil || !strings.Contains(string(out), c.want) {
					t.Fatalf("%s %v: err=%v output:\n%s\nwant it to fail saying %q", command, c.args, err, out, c.want)
				}
			})
		}
	}
}

func withoutStepwiseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STEPWISE_KAFKA") && !strings.HasPrefix(kv, "STEPWISE_REDIS") {
			env = append(env, kv)
		}
	}
	return env
}

func TestProcesses_a_parked_run_resumes_after_both_workers_were_killed(t *testing.T) {
	bin := programs(t)
	in := newInfra(t)
	cfgPath := writeConfig(t, approvalsConfig)
	stack := connect(t, in, parseConfig(t, approvalsConfig))
	base := serve(t, stack)
	env := []string{app.EnvKafkaBrokers + "=" + strings.Join(in.brokers, ","), app.EnvRedisURL + "=" + in.redisURL}
	steps := startProcess(t, filepath.Join(bin, "stepworker"), env, "--config", cfgPath)
	tools := startProcess(t, filepath.Join(bin, "toolworker"), env, "--config", cfgPath)

	id := createRun(t, base, "r-killed-while-waiting", "approvals", script(call("A", "tool_a", `{"n":1}`), call("B", "echo", `{"n":2}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	steps.kill(t)
	tools.kill(t)

	decide(t, base, id, map[string]any{"decision_id": "after-kill", "call_id": "A", "action": "resume", "decided_by": "ops"})
	startProcess(t, filepath.Join(bin, "stepworker"), env, "--config", cfgPath)
	startProcess(t, filepath.Join(bin, "toolworker"), env, "--config", cfgPath)
	v := waitDone(t, base, id, 60*time.Second)
	assertNaturalEnd(t, v, 1)
	if c := callOf(v, "A"); c.Status != "succeeded" || c.Decision == nil || c.Decision.DecidedBy != "ops" {
		t.Fatalf("A: %+v", c)
	}
}
