package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// A run may bring its own script model, but not one that holds an
// inference slot for as long as it likes: a turn that waits past
// runs.max_script_delay is refused at create, naming the field and the cap.
func TestFairness_a_runs_script_that_waits_past_the_cap_is_refused(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, testConfig))
	base := serve(t, stack)
	body, _ := json.Marshal(map[string]any{"run_id": "r-sleepy", "agent": "assistant", "input": "go",
		"model": json.RawMessage(`{"provider":"script","turns":[{"text":"zzz","delay_ms":99999999999999}]}`)})
	res, err := http.Post(base+"/v1/runs", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(answer), "turns[0]") ||
		!strings.Contains(string(answer), "delay_ms 99999999999999") || !strings.Contains(string(answer), "runs.max_script_delay (10s)") {
		t.Fatalf("create: %d %s, want 400 naming turns[0].delay_ms and runs.max_script_delay (10s)", res.StatusCode, answer)
	}
	if code := httpDo(t, http.MethodGet, base+"/v1/runs/r-sleepy", nil, nil); code != http.StatusNotFound {
		t.Fatalf("the refused run was kept: GET answers %d", code)
	}
}

// oneSlot is a step worker of one pool slot, whose runs may bring scripts
// that wait up to an hour a turn; lease is the step lease.
func oneSlot(lease string) string {
	return `
kafka: {partitions: 4}
stepworker: {concurrency: 1, lease: ` + lease + `, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 1s, default_timeout: 10s}
runs: {max_script_delay: 1h}
agents:
  assistant:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo]
`
}

// tenMinutes is a script whose one turn holds its answer back for ten minutes.
const tenMinutes = `{"provider":"script","turns":[{"text":"zzz","delay_ms":600000}]}`

// A cancelled run's inference stops at once: the only pool slot, which it
// held for a ten-minute turn, runs the next run's step right after. The
// lease (a minute) is too long for its renewal to be what noticed.
func TestFairness_a_cancel_frees_the_inference_slot_at_once(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, oneSlot("1m")))
	workers(t, stack)
	base := serve(t, stack)
	sleepy := createRun(t, base, "r-sleepy", "assistant", tenMinutes)
	waitFor(t, base, sleepy, "running", func(v runView) bool { return v.Status == pipeline.RunRunning })
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+sleepy+"/cancel", map[string]any{"reason": "too slow"}, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	next := createRun(t, base, "r-next", "assistant", `{"provider":"script","turns":[{"text":"done"}]}`)
	assertNaturalEnd(t, waitDone(t, base, next, 15*time.Second), 0)
	if v := getRun(t, base, sleepy); v.Termination.Reason != pipeline.ReasonCancelled {
		t.Fatalf("the sleepy run ended %+v, want cancelled", v.Termination)
	}
}

// A run that ends while another worker infers its step (cancelled there:
// here, straight in the store) stops that inference at the step lease's
// next renewal, which the ended run refuses: the slot runs the next step.
func TestFairness_an_inference_stops_when_its_renewal_finds_the_run_ended(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, oneSlot("1s")))
	workers(t, stack)
	base := serve(t, stack)
	sleepy := createRun(t, base, "r-sleepy", "assistant", tenMinutes)
	waitFor(t, base, sleepy, "running", func(v runView) bool { return v.Status == pipeline.RunRunning })
	if _, err := stack.Store.CancelRun(context.Background(), sleepy, "", "elsewhere", "too slow", time.Now()); err != nil {
		t.Fatal(err)
	}
	next := createRun(t, base, "r-next", "assistant", `{"provider":"script","turns":[{"text":"done"}]}`)
	assertNaturalEnd(t, waitDone(t, base, next, 15*time.Second), 0)
}
