package app_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/topics"
)

// A poison message, its cause fixed, re-driven with the stepwise command,
// completes its run: an outside system decided a call of a run that did not
// exist yet, so the decision went to the dead-letter topic; once the run is
// created and parks on that call, `stepwise dlq redrive` applies it.
func TestRedrive_a_poison_decision_redriven_after_its_cause_is_fixed_completes_its_run(t *testing.T) {
	bin := filepath.Join(programs(t), "stepwise")
	in := newInfra(t)
	stack := connect(t, in, parseConfig(t, approvalsConfig))
	workers(t, stack)
	base := serve(t, stack)

	const id = "r-poison"
	early := topics.Decision{Header: topics.Header{RunID: id}, DecisionID: "d-early", CallID: "A", Action: topics.ActionResume, DecidedBy: "erp"}
	if err := topics.Publish(stack.Publisher, stack.Names.Decisions(), early); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "stepwise.yaml")
	if err := os.WriteFile(cfgFile, []byte("kafka: {topic_prefix: "+stack.Config.Kafka.TopicPrefix+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dlq := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(append([]string{"dlq"}, args...), "--config", cfgFile)...)
		cmd.Env = append(os.Environ(), "STEPWISE_KAFKA_BROKERS="+strings.Join(in.brokers, ","), "STEPWISE_REDIS_URL="+in.redisURL)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("stepwise dlq %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	var listed string
	testinfra.Eventually(t, 30*time.Second, func() bool {
		listed = dlq("list")
		return strings.Contains(listed, "1 dead-letter records")
	}, func() string { return "the decision is not on the dead-letter topic:\n" + listed })
	for _, want := range []string{stack.Names.Decisions(), id, "dead", "not found"} {
		if !strings.Contains(listed, want) {
			t.Errorf("dlq list lacks %q:\n%s", want, listed)
		}
	}

	// The cause: the run did not exist. Now it does, and waits on call A.
	createRun(t, base, id, "approvals", script(call("A", "tool_a", `{"x":1}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })

	if out := dlq("redrive", "--topic", "decisions", "--dry-run"); !strings.Contains(out, "would re-drive 1 records") {
		t.Fatalf("dry run:\n%s", out)
	}
	time.Sleep(500 * time.Millisecond)
	if v := getRun(t, base, id); v.Status != pipeline.RunWaiting {
		t.Fatalf("after a dry run the run is %s", v.Status)
	}
	if out := dlq("redrive", "--topic", "decisions"); !strings.Contains(out, "re-drove 1 records") {
		t.Fatalf("redrive:\n%s", out)
	}
	v := waitDone(t, base, id, 30*time.Second)
	assertNaturalEnd(t, v, 1)
	if d := callOf(v, "A"); d.Status != pipeline.CallSucceeded {
		t.Fatalf("call A is %s", d.Status)
	}
	if out := dlq("redrive"); !strings.Contains(out, "re-drove 0 records") || !strings.Contains(out, "already re-driven") {
		t.Fatalf("a second redrive:\n%s", out)
	}
	if code := httpDo(t, http.MethodGet, base+"/v1/runs/"+id, nil, nil); code != http.StatusOK {
		t.Fatalf("GET the run: %d", code)
	}
}
