package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
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
// held for a ten-minute turn, runs the next run's step right after. On the
// worker that handles the cancel, the handler stops it: the lease (a
// minute) is too long for its renewal to be what noticed. On any other
// (here, the run is cancelled straight in the store), the worker's watch,
// which reads the status of the runs inferring longer than a tick, stops
// it (ADR 0065), long before the next renewal of a minute's lease; with a
// lease of a second, the renewal, which the ended run refuses, may be what
// stops it first.
func TestFairness_a_cancelled_runs_inference_frees_its_slot_at_once(t *testing.T) {
	for _, tc := range []struct {
		name, lease string
		cancel      func(t *testing.T, stack *app.Stack, base, id string)
	}{
		{"by the cancel's handler", "1m", func(t *testing.T, _ *app.Stack, base, id string) {
			if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+id+"/cancel", map[string]any{"reason": "too slow"}, nil); code != http.StatusAccepted {
				t.Fatalf("cancel: %d", code)
			}
		}},
		{"by the watch elsewhere", "1m", cancelElsewhere},
		{"by the lease renewal elsewhere", "1s", cancelElsewhere},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := connect(t, newInfra(t), parseConfig(t, oneSlot(tc.lease)))
			workers(t, stack)
			base := serve(t, stack)
			sleepy := createRun(t, base, "r-sleepy", "assistant", tenMinutes)
			waitFor(t, base, sleepy, "running", func(v runView) bool { return v.Status == pipeline.RunRunning })
			tc.cancel(t, stack, base, sleepy)
			next := createRun(t, base, "r-next", "assistant", `{"provider":"script","turns":[{"text":"done"}]}`)
			assertNaturalEnd(t, waitDone(t, base, next, 15*time.Second), 0)
			if v := getRun(t, base, sleepy); v.Termination.Reason != pipeline.ReasonCancelled {
				t.Fatalf("the sleepy run ended %+v, want cancelled", v.Termination)
			}
		})
	}
}

// cancelElsewhere cancels the run straight in the store, as the worker of
// another process would: this one's cancel handler never sees it.
func cancelElsewhere(t *testing.T, stack *app.Stack, _, id string) {
	t.Helper()
	if _, err := stack.Store.CancelRun(context.Background(), id, "", "elsewhere", "too slow", time.Now()); err != nil {
		t.Fatal(err)
	}
}

// twoTenants is a step worker of 8 pool slots and the keys of tenants a
// and b. The lease (a minute) is longer than the test: a step deferred for
// its tenant's share runs because a step that ended woke it, not because
// the sweeper came back to it.
const twoTenants = `
kafka: {partitions: 4}
stepworker: {concurrency: 8, lease: 1m, sweep_interval: 100ms, dispatch_timeout: 3s}
toolworker: {lease: 1s, default_timeout: 10s}
auth:
  keys:
    - {name: a, key_env: STEPWISE_TEST_A_KEY, scopes: [runs:write, runs:read], tenant: a}
    - {name: b, key_env: STEPWISE_TEST_B_KEY, scopes: [runs:write, runs:read], tenant: b}
agents:
  assistant:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo]
`

// Tenant a fills the pool with slow runs, six times over; tenant b's run,
// created after them all, does not wait behind them: it is done when at
// most two rounds of a's steps are, where in line it would wait for most
// of a's 48. And a's runs all end: a step deferred for its tenant's
// share is woken when a step ends.
func TestFairness_one_tenants_slow_runs_do_not_hold_up_anothers(t *testing.T) {
	t.Setenv("STEPWISE_TEST_A_KEY", "a-key-0001")
	t.Setenv("STEPWISE_TEST_B_KEY", "b-key-0001")
	stack := connect(t, newInfra(t), parseConfig(t, twoTenants))
	workers(t, stack)
	base := serve(t, stack)
	create := func(key, id, script string) {
		t.Helper()
		body := map[string]any{"run_id": id, "agent": "assistant", "input": "go", "model": json.RawMessage(script)}
		if code := keyDo(t, key, http.MethodPost, base+"/v1/runs", body, nil); code != http.StatusCreated {
			t.Fatalf("create %s: %d", id, code)
		}
	}
	status := func(key, id string) runView {
		t.Helper()
		var v runView
		keyDo(t, key, http.MethodGet, base+"/v1/runs/"+id, nil, &v)
		return v
	}
	var slow []string
	for i := range 48 {
		slow = append(slow, fmt.Sprintf("a-%02d", i))
		create("a-key-0001", slow[i], `{"provider":"script","turns":[{"text":"slow","delay_ms":3000}]}`)
	}
	create("b-key-0001", "b-1", `{"provider":"script","turns":[{"text":"quick"}]}`)
	var b runView
	testinfra.Eventually(t, time.Minute, func() bool {
		b = status("b-key-0001", "b-1")
		return b.Status == pipeline.RunDone
	}, func() string { return "b's run is " + string(b.Status) + " behind a's" })
	assertNaturalEnd(t, b, 0)
	// Judged by order, not by the clock: when b's run is done, at most two
	// rounds of a's steps (8 slots each) are; in line behind a's it would
	// have waited for most of the 48.
	done := 0
	for _, id := range slow {
		if status("a-key-0001", id).Status == pipeline.RunDone {
			done++
		}
	}
	if done > 16 {
		t.Fatalf("b's run was done after %d of a's 48 runs, want at most 16", done)
	}
	for _, id := range slow {
		var a runView
		testinfra.Eventually(t, 45*time.Second, func() bool {
			a = status("a-key-0001", id)
			return a.Status == pipeline.RunDone
		}, func() string { return "a's run " + id + " is " + string(a.Status) })
		assertNaturalEnd(t, a, 0)
	}
}
