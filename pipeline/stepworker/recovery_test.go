package stepworker_test

import (
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/internal/tooling/pipelinetest"
)

// A step worker killed between any two of its Redis writes or publishes —
// in the Step, StepEnd or decision handler, the sweeper or the reconcile —
// is replaced, and every run ends exactly as it would have undisturbed.
func TestStepWorker_a_run_survives_a_crash_at_every_operation(t *testing.T) {
	if testing.Short() {
		t.Skip("drives each scenario once per operation; skipped with -short")
	}
	pipelinetest.CutEverywhere(t, pipelinetest.StepWorker)
}

// Every handler is idempotent and order-blind: each message delivered twice,
// or the messages delivered newest first, change nothing in how a run ends.
func TestStepWorker_duplicate_and_reordered_messages_change_nothing(t *testing.T) {
	pipelinetest.Disorder(t)
}

// A step worker whose one Redis write, publish or RunEnd hook fails, and
// which goes on as its code does (logs, or returns the error), leaves
// nothing undone: the reconcile finds it in the run's state and every run
// ends as it would have undisturbed.
func TestStepWorker_a_run_survives_one_failed_operation_anywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("drives each scenario once per operation; skipped with -short")
	}
	pipelinetest.FailEverywhere(t, pipelinetest.StepWorker)
}

// A rejection of the decisions still held when the run ends, or its
// RunEnd hook, that fails once is done again before the run's result is
// published: the result never goes out without them.
func TestStepWorker_a_failed_rejection_or_RunEnd_hook_is_retried_before_the_result(t *testing.T) {
	pipelinetest.FailEach(t, pipelinetest.HeldAtRunEnd(), pipelinetest.StepWorker)
}

// A budget settle that fails once leaves no hold in the budget: the hold
// recorded with its run is settled or given back from the run's state.
func TestStepWorker_a_failed_budget_settle_leaves_no_hold(t *testing.T) {
	pipelinetest.FailEach(t, pipelinetest.Budget(), pipelinetest.StepWorker)
}

// A step worker killed at any operation while a child run starts, runs,
// ends and tells its parent is replaced, and the parent's call is
// answered by the one child, exactly as undisturbed.
func TestStepWorker_a_crash_anywhere_never_starts_a_child_twice_nor_loses_its_answer(t *testing.T) {
	pipelinetest.CutEach(t, pipelinetest.Child(), pipelinetest.StepWorker)
}

// A step worker whose one operation fails — the child's write, its first
// step's request, its mark, or the decision its end applies to its parent
// — leaves the rest to the reconcile: the parent still gets the child's
// answer.
func TestStepWorker_a_failed_operation_between_a_childs_end_and_its_parent_is_repaired(t *testing.T) {
	pipelinetest.FailEach(t, pipelinetest.Child(), pipelinetest.StepWorker)
}

// The handoff scenario, undisturbed, hands its run from triage to refunds
// once, by its first call, and refunds' tool runs at the next step: what
// every crash, failure and disorder of it above is compared with.
func TestStepWorker_the_handoff_scenario_hands_its_run_off_once(t *testing.T) {
	want := pipelinetest.New(t, pipelinetest.Handoff()).Undisturbed()
	if want.Run.Agent != "triage" || want.Run.CurrentAgent != "refunds" || want.Commits["run.handoff 0 call_0_0"] != 1 {
		t.Fatalf("run %s held by %s, commits %v; want triage's run held by refunds after one run.handoff", want.Run.Agent, want.Run.CurrentAgent, want.Commits)
	}
	for _, m := range want.Messages {
		if m.ToolCallID == "call_1_0" && !strings.Contains(m.Content, "slept_ms") {
			t.Fatalf("step 1's sleep answered %q; want it run, as refunds offers it", m.Content)
		}
	}
}

// A step worker killed at any operation, or whose one operation fails,
// while a run's prompt is compacted, is replaced or goes on, and each
// compaction is kept once: a step run again sends the one kept.
func TestStepWorker_a_crash_or_failure_anywhere_keeps_each_compaction_once(t *testing.T) {
	want := pipelinetest.New(t, pipelinetest.Compaction()).Undisturbed()
	compactions := 0
	for k, n := range want.Commits {
		if strings.HasPrefix(k, "context.compacted ") {
			compactions += n
		}
	}
	if compactions == 0 {
		t.Fatalf("the scenario compacted nothing: commits %v", want.Commits)
	}
	if testing.Short() {
		t.Skip("drives the scenario once per operation; skipped with -short")
	}
	pipelinetest.CutEach(t, pipelinetest.Compaction(), pipelinetest.StepWorker)
	pipelinetest.FailEach(t, pipelinetest.Compaction(), pipelinetest.StepWorker)
}

// A step worker killed at any operation, or whose one operation fails,
// between a plugin tool's commit and the next call's second ToolGate is
// replaced or repaired: the second call is still answered by ToolGate from
// the state the tool committed, as undisturbed.
func TestStepWorker_a_sequential_call_is_judged_again_whatever_fails_in_between(t *testing.T) {
	want := pipelinetest.New(t, pipelinetest.Regate()).Undisturbed()
	for _, m := range want.Messages {
		if m.ToolCallID == "call_0_1" && !strings.Contains(m.Content, "noted") {
			t.Fatalf("echo answered %q; want ToolGate's answer from the note's state", m.Content)
		}
	}
	pipelinetest.CutEach(t, pipelinetest.Regate(), pipelinetest.StepWorker)
	pipelinetest.FailEach(t, pipelinetest.Regate(), pipelinetest.StepWorker)
}
