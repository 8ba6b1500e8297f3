package stepworker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/versions"
	"github.com/stepwise-run/stepwise/topics"
)

// Child runs (ADR 0060): a call of a tool whose executor is an agent parks
// at ToolGate (use_decision_as_result) and starts a child run named
// pipeline.ChildRunID(parent, call). Every follow-up is done from state by
// the reconcile, so a worker that dies between two of them leaves the
// next look to do it:
//   - a parked call whose child is not marked started: the parent's
//     reconcile registers it on the parent, writes it (an idempotent
//     replay when it exists), requests its first step and marks it
//     started (startChildren);
//   - a child that is done: before its result, its end applies the
//     decision child:<child id> to its parent's call, resume with its
//     final answer, or cancel naming its termination (tellParent);
//   - a parent that is done: before its result, its end cancels every
//     child that is not (cancelChildren);
//   - a call that ended otherwise than by its child's answer (a person's
//     decision, its approval timeout): the end of its step cancels the
//     child (cancelOrphans); a worker that dies first leaves it to the
//     parent's end.

// decidedByStepwise is who the decisions stepwise applies by itself are
// decided by.
const decidedByStepwise = "stepwise"

// childRefused says why call c of run may not start a child run, run
// having started children so far; "" when it may. The limits are
// runs.children's.
func (w *Worker) childRefused(run pipeline.Run, c pipeline.ToolCall, children int) string {
	lim := w.cfg.Runs.Children
	switch {
	case run.Depth+1 > lim.MaxDepth:
		return fmt.Sprintf("not started: a child run of this run would be at depth %d, over runs.children.max_depth (%d)", run.Depth+1, lim.MaxDepth)
	case children >= lim.MaxPerRun:
		return fmt.Sprintf("not started: this run has started %d child runs, runs.children.max_per_run", children)
	case strings.ContainsAny(c.ID, "{}"):
		return fmt.Sprintf("not started: call id %q cannot name a child run (it has a brace)", c.ID)
	}
	return ""
}

// startChildren starts the child run of each parked call of an agent
// tool (as ver, the parent's agent version, defines it) that the parent
// does not record as started.
func (w *Worker) startChildren(ctx context.Context, ver *versions.Version, run pipeline.Run, calls []pipeline.ToolCall) error {
	for _, c := range calls {
		if c.Status != pipeline.CallSuspended || run.Children[c.ID] {
			continue
		}
		t, _ := ver.Tool(c.Tool)
		if t.Executor.Agent == "" {
			continue
		}
		if err := w.startChild(ctx, run, c, t.Executor); err != nil {
			return fmt.Errorf("start the child run of call %s of run %s: %w", c.ID, run.ID, err)
		}
	}
	return nil
}

// startChild registers call c's child on run (so that run's end finds it
// to cancel), writes it in run's tenant, batch and trace, pinned to the
// version of its agent this worker has now, requests its first step and
// marks it started.
func (w *Worker) startChild(ctx context.Context, run pipeline.Run, c pipeline.ToolCall, ex config.Executor) error {
	if _, registered := run.Children[c.ID]; !registered {
		if err := w.store.MarkChild(ctx, run.ID, c.ID, false); err != nil {
			return err
		}
	}
	input, err := childInput(ex, c.Arguments)
	if err != nil {
		return err
	}
	version, err := w.versions.Pin(ctx, ex.Agent)
	if err != nil {
		return err
	}
	now := w.now()
	child := pipeline.Run{
		ID: pipeline.ChildRunID(run.ID, c.ID), Agent: ex.Agent, AgentVersion: version, Tenant: run.Tenant, Batch: run.Batch, BatchBudget: run.BatchBudget,
		Trace: run.Trace, ParentRunID: run.ID, ParentCallID: c.ID, Depth: run.Depth + 1,
	}
	sum := sha256.Sum256([]byte(ex.Agent + "\x00" + input))
	child.RequestHash = hex.EncodeToString(sum[:])
	got, _, err := w.store.StartRun(ctx, child, []pipeline.Message{{Role: pipeline.RoleUser, Content: input}}, now.Add(w.settings.Lease.Duration), now)
	if err != nil {
		return err
	}
	if got.Status == pipeline.RunCreated && got.Step == 0 && got.RequestedAt.IsZero() {
		if err := w.requestStep(got); err != nil {
			return err
		}
		if err := w.store.MarkRequested(ctx, got.ID, 0, now); err != nil {
			return err
		}
	}
	return w.store.MarkChild(ctx, run.ID, c.ID, true)
}

// childInput is the user message of the child run a call with arguments
// args starts: the executor's input template over the arguments, or the
// arguments' JSON when it has none.
func childInput(ex config.Executor, args json.RawMessage) (string, error) {
	if ex.Input == "" {
		return string(args), nil
	}
	tmpl, err := ex.InputTemplate()
	if err != nil {
		return "", err
	}
	var fields map[string]any
	if err := json.Unmarshal(args, &fields); err != nil {
		return "", fmt.Errorf("arguments are not a JSON object: %w", err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, fields); err != nil {
		return "", fmt.Errorf("input template: %w", err)
	}
	return b.String(), nil
}

// tellParent applies to the call of run's parent that waits for it (run
// being a done child) the decision child:<run id>: a natural end resumes
// it with the child's last answer as its result; any other end cancels it,
// naming the termination. A duplicate is a no-op; a parent that is gone
// has nothing to be told.
func (w *Worker) tellParent(ctx context.Context, run pipeline.Run) error {
	d := topics.Decision{
		Header: topics.Header{RunID: run.ParentRunID}, DecisionID: pipeline.ChildDecisionID(run.ID),
		CallID: run.ParentCallID, Action: topics.ActionResume, DecidedBy: decidedByStepwise,
	}
	t := pipeline.Termination{Reason: pipeline.ReasonError}
	if run.Termination != nil {
		t = *run.Termination
	}
	if t.Reason == pipeline.ReasonNaturalEnd {
		msgs, err := w.store.Messages(ctx, run.ID)
		if err != nil {
			return err
		}
		if d.Payload, err = json.Marshal(lastAnswer(msgs)); err != nil {
			return err
		}
	} else {
		d.Action, d.Reason = topics.ActionCancel, "child run "+run.ID+" ended "+describeTermination(t)
	}
	err := w.decideHere(ctx, d)
	if errors.Is(err, store.ErrNotFound) {
		w.log.Info("the parent of a child run is gone", "run_id", run.ID, "parent_run_id", run.ParentRunID)
		return nil
	}
	return err
}

// describeTermination is a termination as a model reads it: the reason,
// its code and its detail.
func describeTermination(t pipeline.Termination) string {
	s := string(t.Reason)
	if t.Code != "" {
		s += " (" + t.Code + ")"
	}
	if t.Detail != "" {
		s += ": " + t.Detail
	}
	return s
}

// lastAnswer is the content of the last assistant message of msgs ("" when
// there is none).
func lastAnswer(msgs []pipeline.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == pipeline.RoleAssistant {
			return msgs[i].Content
		}
	}
	return ""
}

// cancelChildren cancels each child run of done run that is not done: a
// registered child that was never written is left alone (nothing starts it
// once its parent is done).
func (w *Worker) cancelChildren(ctx context.Context, run pipeline.Run) error {
	ids := make([]string, 0, len(run.Children))
	for call := range run.Children {
		ids = append(ids, pipeline.ChildRunID(run.ID, call))
	}
	reason := "its parent run " + run.ID + " ended"
	if run.Termination != nil {
		reason += " " + describeTermination(*run.Termination)
	}
	return w.cancelRuns(ctx, run, ids, reason)
}

// cancelOrphans cancels the child run of each of calls (a step's, ended)
// that its child did not answer: decided by a person, or timed out. No
// read when every child answered.
func (w *Worker) cancelOrphans(ctx context.Context, run pipeline.Run, calls []pipeline.ToolCall) error {
	var ids []string
	for _, c := range calls {
		child := pipeline.ChildRunID(run.ID, c.ID)
		if _, ok := run.Children[c.ID]; ok && (c.Decision == nil || c.Decision.ID != pipeline.ChildDecisionID(child)) {
			ids = append(ids, child)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return w.cancelRuns(ctx, run, ids, "the call of its parent run "+run.ID+" that waited for it ended without it")
}

// cancelRuns cancels each run of ids, children of run, that is written
// and not done, saying why.
func (w *Worker) cancelRuns(ctx context.Context, run pipeline.Run, ids []string, reason string) error {
	statuses, err := w.store.RunStatuses(ctx, ids)
	if err != nil {
		return err
	}
	for i, st := range statuses {
		if st.Status == "" || st.Status.Final() {
			continue
		}
		d := topics.Decision{
			Header: topics.Header{RunID: ids[i]}, DecisionID: "parent:" + run.ID, Action: topics.ActionCancelRun,
			DecidedBy: decidedByStepwise, Reason: reason,
		}
		if err := w.cancelRun(ctx, d, ""); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}
