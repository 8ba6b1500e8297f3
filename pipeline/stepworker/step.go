package stepworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/tracing"
	"github.com/stepwise-run/stepwise/pipeline/versions"
	"github.com/stepwise-run/stepwise/pipeline/worker"
	"github.com/stepwise-run/stepwise/topics"
)

// HandleStep handles StepRequested: it takes a pool slot (waiting while
// the pool is full: the back-pressure), claims the step with a lease of its
// own (RunStart on the first step happens in the claim), hands inference to
// the slot and acknowledges. A request whose step is held under a live
// lease is a no-op; any other refusal (the step was committed, the run
// waits or is done) reconciles the run, so a request redelivered after its
// holder died between commit and publish finishes that holder's job.
//
// A step whose tenant is over its share of the pool (shares.go) is
// deferred: claimed and given back at once, without waiting for a slot
// when the request names the tenant and the pool is full, so that the
// partition goes on to other tenants' requests.
func (w *Worker) HandleStep(msg *message.Message) error {
	req, err := topics.Decode[topics.StepRequested](msg.Payload)
	if err != nil {
		return err
	}
	ctx := msg.Context()
	log := worker.LogWith(w.log, "run_id", req.RunID, "step", req.Step)
	if req.Tenant != "" && w.shares.over(req.Tenant, w.poolFull()) {
		now := w.now()
		run, err := w.store.ClaimStep(ctx, req.RunID, req.Step, w.lease(w.claims.Next(), now), now)
		if err != nil {
			return w.claimRefused(ctx, req, err, log)
		}
		w.deferForShare(ctx, run, log)
		return nil
	}
	waits := w.shares.wait(req.Tenant)
	defer waits.giveBack()
	slot, err := w.pool.Take(ctx)
	if err != nil {
		return err // stopping: the message comes back to whoever owns the partition next
	}
	now := w.now()
	run, msgs, err := w.store.ClaimStepWithMessages(ctx, req.RunID, req.Step, w.lease(w.claims.Next(), now), now)
	if err != nil {
		slot.Release()
		return w.claimRefused(ctx, req, err, log)
	}
	if w.budgetSpent(run.Attempts) {
		slot.Release()
		return w.claimedTooOften(ctx, run)
	}
	if !w.shares.enter(run, w.poolFull(), waits) {
		slot.Release()
		w.deferForShare(ctx, run, log)
		return nil
	}
	slot.Go(func() {
		defer w.leaveShare(run)
		w.runStep(run, msgs, log)
	})
	return nil
}

// claimRefused answers a StepRequested whose claim failed with err.
func (w *Worker) claimRefused(ctx context.Context, req topics.StepRequested, err error, log *slog.Logger) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return topics.Permanent(fmt.Errorf("step %d of run %s: %w", req.Step, req.RunID, err))
	case errors.Is(err, store.ErrStale):
		log.Debug("step request is stale; reconciling", "reason", err)
		return w.reconcile(ctx, req.RunID)
	case errors.Is(err, store.ErrLeaseHeld):
		log.Debug("step is held by another claim", "reason", err)
		return nil
	}
	return fmt.Errorf("claim step %d of run %s: %w", req.Step, req.RunID, err)
}

// stepHere claims the step a fan-in has just moved the run to and runs it
// in the fan-in's pool slot, as HandleStep would have on the pool: the step
// needs no StepRequested, no outbox mark and no trip through Kafka. A claim
// refused (the run moved on meanwhile: cancelled, say) leaves the run to
// whoever moved it; a claim that fails otherwise requests the step as a
// reconcile does. A worker that dies in between leaves a pending step with
// no mark, which the sweeper requests.
func (w *Worker) stepHere(ctx context.Context, run pipeline.Run) error {
	now := w.now()
	claimed, msgs, err := w.store.ClaimStepWithMessages(ctx, run.ID, run.Step, w.lease(w.claims.Next(), now), now)
	switch {
	case errors.Is(err, store.ErrStale), errors.Is(err, store.ErrLeaseHeld), errors.Is(err, store.ErrNotFound):
		w.log.Debug("next step moved on before its claim", "run_id", run.ID, "step", run.Step, "reason", err)
		return nil
	case err != nil:
		w.log.Warn("claim the next step; requesting it instead", "run_id", run.ID, "step", run.Step, "error", err)
		if err := w.requestStep(run); err != nil {
			return err
		}
		return w.store.MarkRequested(ctx, run.ID, run.Step, now)
	}
	return w.runHere(ctx, claimed, msgs)
}

// runHere runs a step this worker claimed in the pool slot it holds, or
// defers it when its tenant is over its share of the pool: the slot is
// then free for another tenant's step.
func (w *Worker) runHere(ctx context.Context, run pipeline.Run, msgs []pipeline.Message) error {
	if w.budgetSpent(run.Attempts) {
		return w.claimedTooOften(ctx, run)
	}
	log := worker.LogWith(w.log, "run_id", run.ID, "step", run.Step)
	if !w.shares.enter(run, w.poolFull(), nil) {
		w.deferForShare(ctx, run, log)
		return nil
	}
	defer w.leaveShare(run)
	w.runStep(run, msgs, log)
	return nil
}

// claimedTooOften ends a run whose step was claimed more often than the
// retry budget allows.
func (w *Worker) claimedTooOften(ctx context.Context, run pipeline.Run) error {
	return w.giveUp(ctx, run, fmt.Sprintf("step %d was claimed %d times without finishing", run.Step, run.Attempts-1))
}

// infer runs RunStart (first step), StepStart, BeforeInference — where
// plugins shape the request or skip inference, ending the run
// behavior_requested (nil response) —, the inference, and AfterInference,
// where plugins edit or drop the proposed calls, or end the run (all of
// them dropped; the step's commit ends it: ph.pc.End).
func (w *Worker) infer(ctx context.Context, ph *phases, run pipeline.Run, agent config.Agent, mdl model.Model, specs []model.ToolSpec, log *slog.Logger) (*model.Response, error) {
	if run.Step == 0 {
		if err := ph.run(ctx, pipeline.PhaseRunStart); err != nil {
			return nil, err
		}
	}
	if err := ph.run(ctx, pipeline.PhaseStepStart); err != nil {
		return nil, err
	}
	// The request's messages are the hooks' to change (a copy of theirs);
	// without hooks, only the model reads them.
	msgs := ph.pc.Messages
	if !ph.set.Empty() {
		msgs = slices.Clone(msgs)
	}
	ph.pc.Request = &plugin.Request{System: agent.System, Messages: msgs, Tools: specs}
	if err := ph.run(ctx, pipeline.PhaseBeforeInference); err != nil {
		return nil, err
	}
	req := ph.pc.Request
	ph.pc.Request = nil
	if ph.pc.Skip != "" {
		return nil, w.finish(ctx, run, pipeline.Termination{Reason: pipeline.ReasonBehaviorRequested, Detail: ph.pc.Skip})
	}
	deltas := w.streamText(ctx, run, log)
	resp, err := w.inferOrAwait(ctx, run, agent, mdl, model.Request{
		RunID: run.ID, Step: run.Step, System: req.System, Messages: req.Messages, Tools: req.Tools,
		Override: req.Override, OnText: deltas.add,
	})
	deltas.close()
	if err != nil {
		return nil, fmt.Errorf("inference failed: %w", err)
	}
	ph.pc.Response = &resp
	if err := ph.run(ctx, pipeline.PhaseAfterInference); err != nil {
		return nil, err
	}
	ph.pc.Response = nil
	resp.ToolCalls = proposed(resp.ToolCalls, ph.pc.Drop, ph.pc.End)
	return &resp, nil
}

// proposed are the calls AfterInference leaves of the model's: none when a
// plugin ends the run (end), else those it did not drop (their indexes
// when the model answered), as its actions edited them.
func proposed(calls []pipeline.ToolCallRequest, drop []int, end string) []pipeline.ToolCallRequest {
	if end != "" {
		return nil
	}
	if len(drop) == 0 {
		return calls
	}
	out := make([]pipeline.ToolCallRequest, 0, len(calls))
	for i, c := range calls {
		if !slices.Contains(drop, i) {
			out = append(out, c)
		}
	}
	return out
}

// runStep runs inference for a claimed step on msgs (the conversation, read
// with the claim) and commits its outcome as the claim's owner
// (run.LeaseOwner). It runs on the pool, under the worker's context: when
// that ends (Drain gave up), nothing is committed and the lease is released
// for another worker to take the step over. The inference stops too, and
// its slot is free at once, when the run is cancelled (w.inferring) or the
// claim's renewal is refused (the run ended, or the step was taken over):
// its outcome would be dropped.
func (w *Worker) runStep(run pipeline.Run, msgs []pipeline.Message, log *slog.Logger) {
	ctx, done := w.inferring.Start(w.ctx, run.ID)
	defer done()
	ctx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	ctx, span := tracing.Start(ctx, run.Trace, oteltrace.SpanKindConsumer, func() (string, []attribute.KeyValue) {
		return "step " + strconv.Itoa(run.Step), []attribute.KeyValue{tracing.RunID(run.ID), tracing.Step(run.Step),
			tracing.Agent(run.CurrentAgent), attribute.Int("stepwise.attempt", run.Attempts)}
	})
	defer span.End()
	log = tracing.Log(log, span)
	owner, started := run.LeaseOwner, time.Now()
	committed := false
	defer func() {
		if cause := context.Cause(ctx); ctx.Err() != nil && !committed {
			log.Info("inference stopped; nothing is committed", "reason", cause)
			w.abandonStep(run, log)
		}
	}()
	ver, err := w.versionOf(ctx, run)
	if err != nil {
		if lostVersion(err) {
			w.logErr(log, "end run", w.giveUp(ctx, run, err.Error()))
		} else {
			log.Error("read the run's agent version; the sweeper will retry the step", "error", err)
		}
		return
	}
	agent := ver.Agent
	mdl, err := w.models.forRun(run)
	if err != nil {
		w.logErr(log, "end run", w.giveUp(ctx, run, err.Error()))
		return
	}
	slot, ok := w.takeLimit(ctx, run, log)
	if !ok {
		return // deferred: the step waits for its model, holding no pool slot
	}
	defer w.releaseLimit(slot, log)
	budget, ok := w.reserve(ctx, run, mdl, log)
	if !ok {
		return // stopped: its budget is spent
	}
	var used store.Amounts // settled once the inference is over; all of it comes back if it fails
	defer func() { w.settle(budget, used, log) }()
	stopRenewing := worker.KeepLease(ctx, w.settings.Lease.Duration,
		func(ctx context.Context) error {
			now := w.now()
			if slot.Holder != "" {
				w.logErr(log, "renew the slot of the model's limits", w.limits.Renew(ctx, slot, w.settings.Lease.Duration, now))
			}
			return w.store.RenewStepLease(ctx, run.ID, run.Step, w.lease(owner, now))
		},
		func(err error) bool { return errors.Is(err, store.ErrLeaseLost) },
		func() { lost(errLeaseLost) })
	defer stopRenewing()
	ph, err := w.phases(ctx, run, seenBy(agent, run, msgs))
	if err != nil {
		log.Error("load plugin state; the sweeper will retry the step", "error", err)
		return
	}
	if !ph.set.Empty() { // only hooks use them
		ph.pc.Model, ph.pc.Keep = mdl, keeper{w: w, run: run, lost: lost}
	}
	specs := append(w.toolSpecs(ctx, ver, agent.Tools), handoffSpecs(ver)...)
	resp, err := w.infer(ctx, ph, run, agent, mdl, specs, log)
	stopRenewing() // the commit checks the lease; renewing past it would only fail
	if parked(err, log) {
		return // the step's batch answers it, or the sweeper retries it (batched.go)
	}
	if err != nil {
		if ctx.Err() == nil && !w.rateLimited(ctx, run, err, log) {
			w.logErr(log, "end run", w.giveUp(ctx, run, err.Error()))
		}
		return
	}

	if resp == nil {
		return // the run ended behavior_requested
	}
	resp.Usage = w.cost(run, *resp)
	used = store.Amounts{Tokens: resp.Usage.Total(), Cost: pipeline.MicroUSD(resp.Usage.CostUSD)}
	// Settled before the commit: the tokens are spent whatever becomes of
	// it, and a worker that dies after the commit keeps no hold (one that
	// dies before has its hold given back when its lease runs out).
	w.settle(budget, used, log)
	budget = reservation{}
	w.metrics.Tokens(w.models.keyOf(run), resp.Usage)
	if slot.Holder != "" {
		w.logErr(log, "count the tokens of the model's limits", w.limits.Used(ctx, slot.Name, resp.Usage.Total(), w.now()))
	}
	// A secret the model repeats (its API key echoed back, say) stops here.
	resp.Text = w.redact.String(resp.Text)
	for i := range resp.ToolCalls {
		resp.ToolCalls[i].Arguments = w.redact.JSON(resp.ToolCalls[i].Arguments)
	}
	calls, err := w.gateSpan(ctx, ph, run, ver, paramsOf(specs), nameCalls(ver, run, msgs, resp.ToolCalls))
	if err != nil {
		w.logErr(log, "end run", w.giveUp(ctx, run, err.Error()))
		return
	}
	assistant := pipeline.Message{Role: pipeline.RoleAssistant, Content: resp.Text}
	for _, c := range calls {
		assistant.ToolCalls = append(assistant.ToolCalls, pipeline.ToolCallRequest{ID: c.ID, Name: c.Tool, Arguments: c.Arguments})
	}
	// From its commit on, a step that hands the run off runs its calls as
	// the agent it hands the run to runs them, and the run is pinned to the
	// version of that agent this worker has now.
	handoff := handoffOf(run, agent, calls)
	mode := agent
	if handoff != nil {
		if handoff.Version, err = w.versions.Pin(ctx, handoff.To); err != nil {
			log.Error("pin the version of the agent the run is handed to; the sweeper will retry the step", "error", err)
			return
		}
		if next, ok := w.versions.Current(handoff.To); ok {
			mode = next.Agent
		}
	}
	w.markOutgoing(mode, calls) // published by the commit's reconcile, marked by the commit (marks.go)
	failed := ph.strand()
	commit := store.StepCommit{Assistant: assistant, Calls: calls, Usage: resp.Usage, State: ph.updates(), Failed: failed,
		Sequential: mode.Sequential(), Handoff: handoff}
	var held []store.HeldDecision
	runID, commitAt := run.ID, w.now() // the commit's reply replaces run and calls, with nothing on an error
	if ending := ph.pc.End; len(calls) == 0 && (ending != "" || w.plugins[run.CurrentAgent].Empty()) {
		// No call to wait for and no StepEnd hook to run (or a plugin
		// ended the run at AfterInference): the step ends as it commits
		// (endStep would find just this).
		end := store.StepEnd{Finish: finishOf(nil), CallIDs: []string{}}
		if ending != "" {
			end.Finish = &pipeline.Termination{Reason: pipeline.ReasonBehaviorRequested, Detail: ending}
		}
		run, held, err = w.store.CommitAndEnd(ctx, run.ID, run.Step, owner, commit, end, w.now())
	} else {
		run, calls, err = w.store.CommitStep(ctx, run.ID, run.Step, owner, commit, commitAt)
	}
	if errors.Is(err, store.ErrStale) || errors.Is(err, store.ErrLeaseLost) {
		log.Info("step outcome dropped: the step moved on without this claim", "reason", err)
		return
	}
	if err != nil {
		// The commit may have been written, marks and all, before the
		// error: they are taken back, so another reconcile publishes the
		// calls rather than trust this live worker to.
		log.Error("commit step; the sweeper will retry it", "error", err)
		marked := w.outgoing(commit.Calls)
		for i := range marked {
			marked[i].DispatchedAt = commitAt // as the commit marks them
		}
		w.unsent.add(runID, marked)
		w.unsent.clear(context.WithoutCancel(ctx), w.store, w.log)
		return
	}
	committed = true
	w.metrics.StepCommitted(run.CurrentAgent, time.Since(started))
	// A cancel or a lost renewal that lands now stops nothing: the outcome
	// is committed, and its follow-ups go on.
	w.logErr(log, "reconcile after commit", w.reconcileCommitted(context.WithoutCancel(ctx), run, calls, held))
}

// abandonStep releases the lease of a step whose inference stopped before
// its commit (the worker stopping, its run cancelled, its renewal refused)
// and asks the sweeper to look at the run now, so another worker takes the
// step over without waiting for the lease to run out. It uses a context of
// its own: the step's has ended.
func (w *Worker) abandonStep(run pipeline.Run, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), releaseTimeout)
	defer cancel()
	err := w.store.ReleaseStepLease(ctx, run.ID, run.Step, run.LeaseOwner)
	if errors.Is(err, store.ErrLeaseLost) {
		return // committed or taken over meanwhile
	}
	if err == nil {
		err = w.store.ScheduleSweep(ctx, run.ID, w.now())
	}
	w.logErr(log, "release the lease of an abandoned step", err)
}

// releaseTimeout bounds the writes that release an abandoned claim.
const releaseTimeout = 5 * time.Second

// nameCalls turns the model's proposals into call records. A call keeps the
// model's id when the run has no call of that id yet; otherwise (or with no
// id) it gets one derived from the step and its position, so ids are unique
// within the run and the same on every attempt of the step. The run's call
// ids are those of its conversation's assistant messages, msgs (read with
// the claim): CommitStep writes each call with the message that names it,
// so no id is missed and no round trip is needed; CommitStep's refusal of
// a taken id stays the backstop.
func nameCalls(ver *versions.Version, run pipeline.Run, msgs []pipeline.Message, reqs []pipeline.ToolCallRequest) []pipeline.ToolCall {
	derived := func(i int) string { return "call_" + strconv.Itoa(run.Step) + "_" + strconv.Itoa(i) }
	taken := takenIDs(msgs, reqs, derived)
	seen := map[string]bool{} // in this step
	calls := make([]pipeline.ToolCall, len(reqs))
	for i, r := range reqs {
		id := r.ID
		if id == "" || seen[id] {
			id = derived(i)
		}
		for taken(id) || seen[id] {
			id += "_s" + strconv.Itoa(run.Step)
		}
		seen[id] = true
		t, _ := ver.Tool(r.Name)
		calls[i] = pipeline.ToolCall{
			ID: id, RunID: run.ID, Step: run.Step, Index: i, Tool: r.Name,
			Queue: queueOf(t.Queue), Status: pipeline.CallNew, Arguments: r.Arguments,
		}
	}
	return calls
}

// takenIDs reports whether the run's conversation, msgs, names a call id.
// It looks up the ids a step's calls are most likely to get (the model's,
// and those derived from their positions) in one pass over msgs, keeping
// only those: a set of every id of a long run, built on each of its steps,
// cost the run the square of its calls. Any other id (one suffixed after a
// clash) has every id of msgs gathered, once.
func takenIDs(msgs []pipeline.Message, reqs []pipeline.ToolCallRequest, derived func(int) string) func(string) bool {
	likely := make(map[string]bool, 2*len(reqs)) // id → named in msgs
	for i, r := range reqs {
		likely[r.ID], likely[derived(i)] = false, false
	}
	delete(likely, "")
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if _, ok := likely[c.ID]; ok {
				likely[c.ID] = true
			}
		}
	}
	var all map[string]bool
	return func(id string) bool {
		if named, ok := likely[id]; ok {
			return named
		}
		if all == nil {
			all = map[string]bool{}
			for _, m := range msgs {
				for _, c := range m.ToolCalls {
					all[c.ID] = true
				}
			}
		}
		return all[id]
	}
}

func (w *Worker) logErr(log *slog.Logger, what string, err error) {
	if err != nil {
		log.Error(what, "error", err)
	}
}
