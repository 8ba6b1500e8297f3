package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/cli"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// stepsRun lists the steps the run's events show started, in order.
func stepsRun(t *testing.T, stack *app.Stack, runID string) []int {
	t.Helper()
	events, err := stack.Store.Events(context.Background(), runID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range events {
		if e.Type == pipeline.EventStepStarted {
			out = append(out, e.Step)
		}
	}
	return out
}

// finishedOriginal runs a stack and on it run r-orig of threeSteps to its
// end; it returns the stack and the gateway's base URL.
func finishedOriginal(t *testing.T) (*app.Stack, string) {
	t.Helper()
	stack := connect(t, newInfra(t), parseConfig(t, testConfig))
	workers(t, stack)
	base := serve(t, stack)
	createRun(t, base, "r-orig", "assistant", threeSteps)
	assertNaturalEnd(t, waitDone(t, base, "r-orig", 30*time.Second), 2)
	return stack, base
}

func TestFork_from_step_1_of_a_finished_3_step_run_replays_steps_0_and_1_and_runs_step_2_anew(t *testing.T) {
	stack, base := finishedOriginal(t)
	orig := "r-orig"
	origMsgs := getMessages(t, base, orig)

	body := map[string]any{"from_step": 1, "run_id": "r-fork"}
	var created struct {
		RunID string `json:"run_id"`
	}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+orig+"/fork", body, &created); code != http.StatusCreated || created.RunID != "r-fork" {
		t.Fatalf("fork: status %d, run %q", code, created.RunID)
	}
	assertNaturalEnd(t, waitDone(t, base, "r-fork", 30*time.Second), 2)

	msgs := getMessages(t, base, "r-fork")
	// Input, step 0 (assistant, two results), step 1 (assistant, two
	// results) copied; step 2's answer is the fork's own.
	if len(msgs) != len(origMsgs) || !slices.EqualFunc(msgs[:7], origMsgs[:7], sameMessage) || msgs[7].Content != "done" {
		t.Fatalf("fork's conversation:\n%+v\nwant the original's through step 1, then step 2 anew:\n%+v", msgs, origMsgs)
	}
	if got := stepsRun(t, stack, "r-fork"); !slices.Equal(got, []int{2}) {
		t.Fatalf("the fork ran steps %v, want only step 2", got)
	}
	if v := getRun(t, base, "r-fork"); v.ForkedFrom == nil || *v.ForkedFrom != (pipeline.ForkPoint{RunID: orig, Step: 1}) {
		t.Fatalf("forked_from = %+v, want %s at step 1", v.ForkedFrom, orig)
	}

	// The same fork again is a replay; a step past the run's is refused,
	// naming the range.
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+orig+"/fork", body, nil); code != http.StatusOK {
		t.Fatalf("the same fork again: status %d, want 200", code)
	}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+orig+"/fork", map[string]any{"from_step": 3}, nil); code != http.StatusBadRequest {
		t.Fatalf("fork from step 3 of a 3-step run: status %d, want 400", code)
	}
}

func TestFork_with_an_edited_input_runs_on_from_the_step_after_with_the_new_text(t *testing.T) {
	stack, base := finishedOriginal(t)
	orig := "r-orig"
	origMsgs := getMessages(t, base, orig)

	body := map[string]any{"from_step": 0, "run_id": "r-edited", "input": "go further", "metadata": map[string]string{"why": "edit"}}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+orig+"/fork", body, nil); code != http.StatusCreated {
		t.Fatalf("fork: status %d", code)
	}
	assertNaturalEnd(t, waitDone(t, base, "r-edited", 30*time.Second), 2)
	msgs := getMessages(t, base, "r-edited")
	if msgs[0].Content != "go further" || !slices.EqualFunc(msgs[1:4], origMsgs[1:4], sameMessage) || msgs[4].Content != "step two" {
		t.Fatalf("edited fork's conversation: %+v", msgs)
	}
	if got := stepsRun(t, stack, "r-edited"); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("the fork ran steps %v, want 1 and 2", got)
	}
	if v := getRun(t, base, "r-edited"); string(v.Metadata) != `{"why":"edit"}` {
		t.Fatalf("metadata = %s, want the fork's", v.Metadata)
	}
}

// sameMessage compares two messages, their tool calls' arguments as text.
func sameMessage(a, b pipeline.Message) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestRerun_of_a_batchs_failed_runs_starts_each_once_even_when_the_request_is_retried(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, clusterConfig))
	workers(t, stack)
	base := serve(t, stack)
	outcomes := followRequests(t, stack)

	// A batch of 5 runs: 3 park (refund asks for approval) and are then
	// failed as a worker that gives up fails them, 2 end naturally.
	parks := `{"provider":"script","turns":[{"text":"wait","tool_calls":[{"name":"refund","arguments":{}}]}]}`
	var items []map[string]any
	for i := range 5 {
		model := `{"provider":"script","turns":[{"text":"fine"}]}`
		if i < 3 {
			model = parks
		}
		items = append(items, map[string]any{"run_id": fmt.Sprintf("b-%d", i), "agent": "assistant", "input": fmt.Sprintf("item %d", i), "model": json.RawMessage(model)})
	}
	var batch struct {
		BatchID string `json:"batch_id"`
	}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/batch", items, &batch); code != http.StatusCreated {
		t.Fatalf("batch: status %d", code)
	}
	failed := []string{"b-0", "b-1", "b-2"}
	for _, id := range failed {
		testinfra.Eventually(t, 30*time.Second, func() bool { return getRun(t, base, id).Status == pipeline.RunWaiting },
			func() string { return id + " never parked" })
		if _, err := stack.Store.FinishRun(context.Background(), id, pipeline.Termination{Reason: pipeline.ReasonError, Detail: "gave up"}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"b-3", "b-4"} {
		waitDone(t, base, id, 30*time.Second)
	}

	rerun := map[string]any{"filter": map[string]any{"batch_id": batch.BatchID, "termination": "error"}}
	var first struct {
		BatchID   string `json:"batch_id"`
		Requested int    `json:"requested"`
	}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/rerun", rerun, &first); code != http.StatusAccepted || first.Requested != 3 {
		t.Fatalf("re-run: status %d, %+v, want 202 with 3 runs requested", code, first)
	}
	// The same re-run again, from the command line.
	code, out, errs := stepwiseCLI(t, "rerun", "--gateway", base, "--batch", batch.BatchID, "--termination", "error")
	if code != cli.ExitOK || !strings.Contains(out, "3 runs requested again in batch "+first.BatchID) {
		t.Fatalf("stepwise rerun: exit %d, %s%s; want the same 3 runs of batch %s", code, out, errs, first.BatchID)
	}

	var list struct {
		Runs []struct {
			RunID   string `json:"run_id"`
			RerunOf string `json:"rerun_of"`
		} `json:"runs"`
	}
	testinfra.Eventually(t, 30*time.Second, func() bool {
		httpDo(t, http.MethodGet, base+"/v1/runs?batch_id="+first.BatchID, nil, &list)
		return len(list.Runs) >= 3
	}, func() string { return fmt.Sprintf("the re-run's batch lists %+v", list.Runs) })
	var origins []string
	for _, r := range list.Runs {
		origins = append(origins, r.RerunOf)
		if v := getRun(t, base, r.RunID); v.RerunOf != r.RerunOf {
			t.Fatalf("GET %s: rerun_of %q, list says %q", r.RunID, v.RerunOf, r.RerunOf)
		}
	}
	slices.Sort(origins)
	if !slices.Equal(origins, failed) {
		t.Fatalf("the re-run's runs re-run %v, want each of %v once", origins, failed)
	}
	want := map[string][]string{}
	for _, r := range list.Runs {
		want[r.RunID] = []string{"created", "duplicate"}
	}
	waitOutcomes(t, outcomes, want)
}

// A gateway that dies between a fork's write and its publish leaves a
// created fork: the sweeper starts it, at the step after its fork point.
func TestFork_whose_gateway_died_before_the_publish_is_started_by_the_sweeper_after_its_fork_point(t *testing.T) {
	stack, base := finishedOriginal(t)
	orig := "r-orig"

	ctx := context.Background()
	h, err := stack.Store.History(ctx, orig)
	if err != nil {
		t.Fatal(err)
	}
	fork := pipeline.Run{ID: "r-orphan", Agent: "assistant", Tenant: pipeline.DefaultTenant, Model: json.RawMessage(threeSteps),
		ForkedFrom: &pipeline.ForkPoint{RunID: orig, Step: 1}}
	now := time.Now()
	if _, _, err := stack.Store.StartRun(ctx, fork, h.Messages[:h.Turns[2]], now, now); err != nil {
		t.Fatal(err)
	}
	assertNaturalEnd(t, waitDone(t, base, "r-orphan", 30*time.Second), 2)
	if got := stepsRun(t, stack, "r-orphan"); !slices.Equal(got, []int{2}) {
		t.Fatalf("the swept fork ran steps %v, want only step 2", got)
	}
}

// A fork from a step after a handoff goes on with the agent that held the
// run then: triage hands the run to refunds at step 0, and a fork from
// step 0 runs steps 1 and 2 as refunds, with its tools and model, as the
// original did.
func TestFork_from_a_step_after_a_handoff_runs_on_with_the_agent_that_held_the_run(t *testing.T) {
	_, base, _ := handedOff(t, "r-handed", "triage")
	body := map[string]any{"from_step": 0, "run_id": "r-handed-fork"}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/r-handed/fork", body, nil); code != http.StatusCreated {
		t.Fatalf("fork: status %d", code)
	}
	v := waitDone(t, base, "r-handed-fork", 30*time.Second)
	assertNaturalEnd(t, v, 2)
	if len(v.ToolCalls) != 1 || v.ToolCalls[0].Tool != "issue_refund" || v.ToolCalls[0].Status != pipeline.CallSucceeded {
		t.Fatalf("the fork's calls %+v, want refunds' issue_refund at step 1", v.ToolCalls)
	}
	if _, current := heldBy(t, base, "r-handed-fork"); current != "refunds" {
		t.Fatalf("the fork is held by %q, want refunds, which held its original after step 0", current)
	}
	msgs := getMessages(t, base, "r-handed-fork")
	if last := msgs[len(msgs)-1]; last.Content != "refunded order 7" {
		t.Fatalf("the fork's last message %+v, want refunds' answer", last)
	}
}
