package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// ClaimStep takes the lease on step `step` of the run for lease.Owner until
// lease.Until and counts the attempt. The first claim of a created run moves
// it to running (event run.started); every claim appends step.started
// (data {"attempt":n}), or step.retried when n > 1.
//
// Refusals: ErrNotFound (no run); ErrStale when the run is done or waiting,
// at another step, or the step is already committed; ErrLeaseHeld when the
// step is being inferred under a lease that has not expired at now (whoever
// holds it, the caller included). An expired lease is taken over. With
// ErrStale and ErrLeaseHeld the current run comes back too.
func (s *Store) ClaimStep(ctx context.Context, runID string, step int, lease Lease, now time.Time) (pipeline.Run, error) {
	cmd, err := s.claimStepCmd(runID, step, lease, now)
	if err != nil {
		return pipeline.Run{}, err
	}
	v, err := s.run(ctx, cmd, "claim step "+strconv.Itoa(step)+" of run "+runID)
	if err != nil {
		return s.currentRun(ctx, runID, err)
	}
	return s.decodeRunReply(runID, v)
}

// ClaimStepWithMessages is ClaimStep, and the run's conversation read
// after the claim in the same round trip: what a step worker needs to
// infer. The messages are nil when the claim is refused; they are shared
// as Claimed's are.
func (s *Store) ClaimStepWithMessages(ctx context.Context, runID string, step int, lease Lease, now time.Time) (pipeline.Run, []pipeline.Message, error) {
	cmd, err := s.claimStepCmd(runID, step, lease, now)
	if err != nil {
		return pipeline.Run{}, nil, err
	}
	var cached conversation
	var read *redis.StringSliceCmd
	v, err := s.evalAmong(ctx, cmd, func(p redis.Pipeliner, eval func()) {
		eval()
		cached, read = s.readConversation(ctx, p, runID)
	})
	if err != nil {
		run, err := s.currentRun(ctx, runID, scriptError(err, "claim step "+strconv.Itoa(step)+" of run "+runID))
		return run, nil, err
	}
	run, err := s.decodeRunReply(runID, v)
	if err != nil {
		return pipeline.Run{}, nil, err
	}
	msgs, err := s.joinConversation(ctx, run, cached, read)
	return run, msgs, err
}

// claimStepCmd is claim_step's command: the run's status and the step's
// states a claim finds and the one it sets, from the tables.
func (s *Store) claimStepCmd(runID string, step int, lease Lease, now time.Time) (script, error) {
	if err := checkLease(lease, now); err != nil {
		return script{}, err
	}
	var evs [3]entry
	for i, typ := range []pipeline.EventType{pipeline.EventRunStarted, pipeline.EventStepStarted, pipeline.EventStepRetried} {
		var err error
		if evs[i], err = newEntry(step, "", typ, now, nil); err != nil {
			return script{}, err
		}
	}
	return callOf(s.scripts.claimStep, []string{s.runKey(runID), s.eventsKey(runID)}, struct {
		Step       int                  `json:"step"`
		Owner      string               `json:"owner"`
		LeaseUntil int64                `json:"lease_until"`
		Now        int64                `json:"now"`
		Created    pipeline.RunStatus   `json:"created"`
		Running    pipeline.RunStatus   `json:"running"`
		From       []pipeline.StepState `json:"from"`
		To         pipeline.StepState   `json:"to"`
		Started    entry                `json:"started"`
		First      entry                `json:"first"`
		Retried    entry                `json:"retried"`
	}{step, lease.Owner, toMillis(lease.Until), toMillis(now),
		pipeline.RunCreated, moved(pipeline.RunCreated, pipeline.RunRunning), claimable, pipeline.StepInferring,
		evs[0], evs[1], evs[2]})
}

// claimable are the step states a claim takes a step from: those the
// table moves to inferring (an expired lease's too).
var claimable = statesTo(stepStates, pipeline.StepInferring)

// held is what lib.lua's step_refusal checks of a step a worker infers: the
// run running at the step, the step inferring under owner's lease.
type held struct {
	Step      int                `json:"step"`
	Owner     string             `json:"owner"`
	Running   pipeline.RunStatus `json:"running"`
	Inferring pipeline.StepState `json:"inferring"`
}

// heldBy is the step a worker, owner, infers, as held says.
func heldBy(step int, owner string) held {
	return held{step, owner, pipeline.RunRunning, pipeline.StepInferring}
}

// RenewStepLease moves the lease of a step the caller is inferring to
// lease.Until. ErrLeaseLost when the run moved on, the step is no longer
// being inferred, or another owner holds it; ErrNotFound when there is no
// such run.
func (s *Store) RenewStepLease(ctx context.Context, runID string, step int, lease Lease) error {
	what := fmt.Sprintf("renew lease of step %d of run %s for %s", step, runID, lease.Owner)
	_, err := s.call(ctx, s.scripts.renewStepLease, what, []string{s.runKey(runID)}, struct {
		held
		LeaseUntil int64 `json:"lease_until"`
	}{heldBy(step, lease.Owner), toMillis(lease.Until)})
	return err
}

// DeferStep gives back step `step`, claimed by owner, without inferring
// it: a limit of its model is reached (reason says which). The step is
// pending again, the claim's attempt uncounted; no reconcile requests it
// before until (Run.DeferUntil), and the sweeper, which the caller
// schedules for until, requests it then. Event step.deferred with data
// {"until", "reason"}. ErrLeaseLost when owner no longer holds the step.
func (s *Store) DeferStep(ctx context.Context, runID string, step int, owner string, until time.Time, reason string, now time.Time) error {
	ev, err := newEntry(step, "", pipeline.EventStepDeferred, now, struct {
		Until  time.Time `json:"until"`
		Reason string    `json:"reason"`
	}{until.UTC(), reason})
	if err != nil {
		return err
	}
	what := fmt.Sprintf("defer step %d of run %s held by %s", step, runID, owner)
	_, err = s.call(ctx, s.scripts.deferStep, what, []string{s.runKey(runID), s.eventsKey(runID)}, struct {
		held
		State pipeline.StepState `json:"state"`
		Until int64              `json:"untilms"`
		Now   int64              `json:"now"`
		Event entry              `json:"event"`
	}{heldBy(step, owner), moved(pipeline.StepInferring, pipeline.StepPending), toMillis(until), toMillis(now), ev})
	return err
}

// AppendDelta appends a message.delta event (data {"text"}) to the run's
// log while owner is inferring step: the model's text as it streams in.
// ErrLeaseLost when the step is no longer owner's to write to.
func (s *Store) AppendDelta(ctx context.Context, runID string, step int, owner, text string, now time.Time) error {
	ev, err := newEntry(step, "", pipeline.EventTextDelta, now, struct {
		Text string `json:"text"`
	}{text})
	if err != nil {
		return err
	}
	what := fmt.Sprintf("append a text delta to step %d of run %s", step, runID)
	_, err = s.call(ctx, s.scripts.appendDelta, what, []string{s.runKey(runID), s.eventsKey(runID)}, struct {
		held
		Event entry `json:"event"`
	}{heldBy(step, owner), ev})
	return err
}

// CommitStep commits the inference of step `step` by owner: it appends
// c.Assistant, creates one call record per c.Calls in the state ToolGate
// decided for it, adds c.Usage to the run, moves the step to tools and
// clears the lease. The store sets each call's run and step, attempts 0,
// updated_at now and queue "default" when empty.
//
// A call's Status is new ("" too), suspended, succeeded, failed or
// cancelled; Gate is kept as given (allow, block, suspend, set_result or
// ""). A suspended call needs Parking (and only a suspended call may have
// one): the store sets an empty ParkedAt to now, fills an empty ArgsHash with
// pipeline.ArgsHash of the arguments and an empty ResumeMode with replay.
// Result and Error are kept for terminal calls (set_result, block) and
// refused for new and suspended ones.
//
// Events: message.assistant (data = the message), then per call
// tool_call.created (data {"tool","queue","index","arguments","status",
// "gate"?}) followed, for a suspended call, by tool_call.suspended (data =
// the parking) and, for a call created terminal, by tool_call.finished
// (data {"status","result"?,"error"?}). A suspended call's approval
// request joins the run's outbox in the same script (an Outcome that
// AsksApproval). Suspended calls enter the pending index after the script; if that write fails the commit stands and the
// error says so (ListPending with a run filter still finds them).
//
// With c.Handoff the commit also hands the run to c.Handoff.To: the run's
// holder (Run.CurrentAgent) and handoff count change, and run.handoff
// (data {"from","to"}, the handing call's id as its call) follows the
// calls' events. The commit is the handoff: a commit refused or redone
// hands nothing off twice.
//
// A new call with DispatchedBy set (one its committer publishes right
// after the commit) is marked as being sent by that worker at now: other
// reconciles leave it to that worker while it is alive (Heartbeat).
//
// c.Calls[i].Index must be i and ids must be unique within the commit
// (ErrInvalid otherwise). Refusals: ErrNotFound; ErrStale when the run is
// not running, at another step, or the step is not being inferred (already
// committed included); ErrLeaseLost when another owner holds the step (an
// expired lease nobody took over still counts as the caller's); ErrConflict
// when a call id already has a record in this run. A refusal writes nothing.
// It returns the updated run and the calls as stored.
func (s *Store) CommitStep(ctx context.Context, runID string, step int, owner string, c StepCommit, now time.Time) (pipeline.Run, []pipeline.ToolCall, error) {
	cmd, written, err := s.commitStepCmd(runID, step, owner, c, now)
	if err != nil {
		return pipeline.Run{}, nil, err
	}
	v, err := s.run(ctx, cmd, "commit step "+strconv.Itoa(step)+" of run "+runID+" by "+owner)
	if err != nil {
		return pipeline.Run{}, nil, err
	}
	return s.decodeCommit(ctx, runID, written, v)
}

// CommitAndEnd is CommitStep for a turn that proposes no tool calls, with
// the step ended by end in the same round trip, right after the commit:
// for a caller that needs nothing from the committed step to end it. It
// returns the run as the end left it, and the decisions still held when
// the end ended the run. When the end did not go through (an error of its
// own, after the commit), it returns the run as the commit left it, and
// the caller ends the step the usual way.
func (s *Store) CommitAndEnd(ctx context.Context, runID string, step int, owner string, c StepCommit, end StepEnd, now time.Time) (pipeline.Run, []HeldDecision, error) {
	if len(c.Calls) > 0 {
		return pipeline.Run{}, nil, fmt.Errorf("%w: a commit with %d calls cannot end its step at once", ErrInvalid, len(c.Calls))
	}
	cmd, _, err := s.commitStepCmd(runID, step, owner, c, now)
	if err != nil {
		return pipeline.Run{}, nil, err
	}
	endCmd, err := s.endStepArgs(runID, step, end, nil, now)
	if err != nil {
		cmd.release()
		return pipeline.Run{}, nil, err
	}
	defer endCmd.release()
	var ended *redis.Cmd
	v, err := s.evalAmong(ctx, cmd, func(p redis.Pipeliner, eval func()) {
		eval()
		ended = endCmd.cmd(ctx) // refused unless the commit went through
		_ = p.Process(ctx, ended)
	})
	if err != nil {
		return pipeline.Run{}, nil, scriptError(err, "commit step "+strconv.Itoa(step)+" of run "+runID+" by "+owner)
	}
	committed, _, err := s.decodeCommit(ctx, runID, nil, v)
	switch {
	case err != nil:
		return committed, nil, err
	case redis.HasErrorPrefix(ended.Err(), "NOSCRIPT"): // the commit stands; end it on its own, loading the script
		run, held, _, err := s.endStep(ctx, runID, step, end, nil, now)
		return run, held, err
	case ended.Err() != nil:
		return committed, nil, nil
	}
	return s.decodeEnded(runID, ended.Val())
}

// commitStepCmd checks c and gives commit_step's command, and the calls it
// writes: the step's move inferring → tools from the table, and the call
// statuses its open count counts.
func (s *Store) commitStepCmd(runID string, step int, owner string, c StepCommit, now time.Time) (script, []writtenCall, error) {
	if c.Assistant.Role != pipeline.RoleAssistant {
		return script{}, nil, fmt.Errorf("%w: assistant message has role %q", ErrInvalid, c.Assistant.Role)
	}
	msg, err := json.Marshal(c.Assistant)
	if err != nil {
		return script{}, nil, fmt.Errorf("%w: assistant message: %v", ErrInvalid, err)
	}
	assistant, err := newEntry(step, "", pipeline.EventAssistantMessage, now, nil)
	if err != nil {
		return script{}, nil, err
	}
	assistant.Ref = refMessage
	// The step's open count (commit_step.lua), which the fan-in reads: only
	// for calls run in parallel, more than one.
	counted := []pipeline.ToolCallStatus{}
	if !c.Sequential && len(c.Calls) > 1 {
		counted = inFlightStatuses
	}
	seen := make(map[string]bool, len(c.Calls))
	written := make([]writtenCall, 0, len(c.Calls))
	for i, call := range c.Calls {
		if err := checkNewCall(i, call, seen); err != nil {
			return script{}, nil, err
		}
		rec, evs, err := newCallRecord(runID, step, call, now)
		if err != nil {
			return script{}, nil, err
		}
		w := writtenCall{ID: call.ID, Status: rec.Status, Fields: callFields(rec), Events: evs}
		if rec.Parking != nil {
			w.Ask = askOf(call.ID, *rec.Parking)
		}
		written = append(written, w)
	}
	handoff, err := handoffOf(step, c.Handoff, now)
	if err != nil {
		return script{}, nil, err
	}
	failed, err := failedEntries(step, "", c.Failed, now)
	if err != nil {
		return script{}, nil, err
	}
	cmd, err := callOf(s.scripts.commitStep,
		[]string{s.runKey(runID), s.eventsKey(runID), s.msgsKey(runID), s.stepKey(runID, step), s.stateKey(runID)},
		struct {
			Step      int                       `json:"step"`
			Owner     string                    `json:"owner"`
			Now       int64                     `json:"now"`
			Running   pipeline.RunStatus        `json:"running"`
			Inferring pipeline.StepState        `json:"inferring"`
			To        pipeline.StepState        `json:"to"`
			InTok     int64                     `json:"in_tok"`
			OutTok    int64                     `json:"out_tok"`
			Cost      int64                     `json:"cost"`
			Message   string                    `json:"message"`
			Assistant entry                     `json:"assistant"`
			Delta     pipeline.EventType        `json:"delta"`
			InFlight  []pipeline.ToolCallStatus `json:"in_flight"`
			Calls     []writtenCall             `json:"calls"`
			State     []stateUpdate             `json:"state"`
			Failed    []entry                   `json:"failed"`
			Handoff   *handoffArg               `json:"handoff,omitempty"`
		}{step, owner, toMillis(now), pipeline.RunRunning, pipeline.StepInferring, moved(pipeline.StepInferring, pipeline.StepTools),
			c.Usage.InputTokens, c.Usage.OutputTokens, pipeline.MicroUSD(c.Usage.CostUSD), string(msg), assistant,
			pipeline.EventTextDelta, counted, written, stateUpdates(c.State), failed, handoff})
	return cmd, written, err
}

// handoffArg is a handoff as commit_step.lua takes it: the agent that
// holds the run next, the call that handed it off and its run.handoff
// entry.
type handoffArg struct {
	To      string `json:"to"`
	Version string `json:"version"`
	Call    string `json:"call"`
	Event   entry  `json:"event"`
}

// handoffOf is h as commit_step.lua takes it; nil for none.
func handoffOf(step int, h *Handoff, now time.Time) (*handoffArg, error) {
	if h == nil {
		return nil, nil
	}
	if h.To == "" || h.From == h.To {
		return nil, fmt.Errorf("%w: a handoff from %q to %q", ErrInvalid, h.From, h.To)
	}
	if err := checkCallID(h.CallID); err != nil {
		return nil, fmt.Errorf("handoff: %w", err)
	}
	ev, err := newEntry(step, h.CallID, pipeline.EventRunHandoff, now, struct {
		From    string `json:"from"`
		To      string `json:"to"`
		Version string `json:"agent_version,omitempty"`
	}{h.From, h.To, h.Version})
	if err != nil {
		return nil, err
	}
	return &handoffArg{To: h.To, Version: h.Version, Call: h.CallID, Event: ev}, nil
}

// writtenCall is a call a commit writes: its id and status, its hash's
// HSET arguments (callFields), its events and, parked, its approval
// request.
type writtenCall struct {
	ID     string                  `json:"id"`
	Status pipeline.ToolCallStatus `json:"status"`
	Fields []any                   `json:"fields"`
	Events []entry                 `json:"events"`
	Ask    *approvalAsk            `json:"ask,omitempty"`
}

// decodeCommit decodes commit_step's reply, the run, and the calls from
// the hashes the commit wrote whole (written: the script need not read
// them back), and indexes the calls it parked.
func (s *Store) decodeCommit(ctx context.Context, runID string, written []writtenCall, v any) (pipeline.Run, []pipeline.ToolCall, error) {
	run, err := s.decodeRunReply(runID, v)
	if err != nil {
		return pipeline.Run{}, nil, err
	}
	calls := make([]pipeline.ToolCall, 0, len(written))
	for _, w := range written {
		stored, err := decodeCall(runID, w.ID, hashOf(w.Fields))
		if err != nil {
			return pipeline.Run{}, nil, err
		}
		calls = append(calls, stored)
	}
	return run, calls, s.indexPending(ctx, run.Tenant, runID, calls...)
}

// DefaultQueue is the queue of a call whose tool names none.
const DefaultQueue = "default"

// createdData is the data of tool_call.created.
type createdData struct {
	Tool      string                  `json:"tool"`
	Queue     string                  `json:"queue"`
	Index     int                     `json:"index"`
	Arguments json.RawMessage         `json:"arguments"`
	Status    pipeline.ToolCallStatus `json:"status"`
	Gate      pipeline.GateAction     `json:"gate,omitempty"`
}

// newCallRecord completes a call of a commit into the record the store
// writes, and builds its entries (refs.go says what each keeps in the
// call).
func newCallRecord(runID string, step int, call pipeline.ToolCall, now time.Time) (pipeline.ToolCall, []entry, error) {
	rec := call
	rec.RunID, rec.Step, rec.UpdatedAt = runID, step, now
	rec.Attempts, rec.LeaseOwner, rec.LeaseUntil = 0, "", time.Time{}
	rec.Decision, rec.OrigArgs = nil, nil
	rec.DispatchedAt = time.Time{}
	if rec.DispatchedBy != "" {
		rec.DispatchedAt = now
	}
	if rec.Queue == "" {
		rec.Queue = DefaultQueue
	}
	if rec.Status == "" {
		rec.Status = pipeline.CallNew
	}
	if rec.Status == pipeline.CallSuspended {
		p, err := parkAt(call.ID, call.Parking, call.Arguments, now)
		if err != nil {
			return pipeline.ToolCall{}, nil, err
		}
		rec.Parking = &p
	}
	created, err := newEntry(step, call.ID, pipeline.EventToolCallCreated, now, struct {
		Status pipeline.ToolCallStatus `json:"status"`
		Gate   pipeline.GateAction     `json:"gate,omitempty"`
	}{rec.Status, rec.Gate})
	if err != nil {
		return pipeline.ToolCall{}, nil, err
	}
	created.Ref = refCall
	evs := []entry{created}
	var next entry
	switch {
	case rec.Status == pipeline.CallSuspended:
		next, err = newEntry(step, call.ID, pipeline.EventToolCallParked, now, parkedOf(*rec.Parking))
	case rec.Status.Terminal():
		next, err = newEntry(step, call.ID, pipeline.EventToolCallFinished, now, finishedData{Status: rec.Status, Error: rec.Error})
	default:
		return rec, evs, nil
	}
	if err != nil {
		return pipeline.ToolCall{}, nil, err
	}
	next.Ref = refCall
	return rec, append(evs, next), nil
}

func checkNewCall(i int, call pipeline.ToolCall, seen map[string]bool) error {
	if err := checkCallID(call.ID); err != nil {
		return fmt.Errorf("call %d: %w", i, err)
	}
	if seen[call.ID] {
		return fmt.Errorf("%w: call id %s appears twice in one commit", ErrInvalid, call.ID)
	}
	seen[call.ID] = true
	if call.Index != i {
		return fmt.Errorf("%w: call %s at position %d has index %d", ErrInvalid, call.ID, i, call.Index)
	}
	if call.Tool == "" {
		return fmt.Errorf("%w: call %s names no tool", ErrInvalid, call.ID)
	}
	st := call.Status
	if st == "" {
		st = pipeline.CallNew
	}
	// A call starts new, or in a state ToolGate may move a new call to
	// without executing it.
	if st != pipeline.CallNew && (st == pipeline.CallRunning || !pipeline.CallNew.CanTransition(st)) {
		return fmt.Errorf("%w: call %s is committed as %s, not new, suspended or terminal", ErrInvalid, call.ID, st)
	}
	switch call.Gate {
	case "", pipeline.GateAllow, pipeline.GateBlock, pipeline.GateSuspend, pipeline.GateSetResult:
	default:
		return fmt.Errorf("%w: call %s has gate action %q", ErrInvalid, call.ID, call.Gate)
	}
	if call.DispatchedBy != "" && (st != pipeline.CallNew || strings.Contains(call.DispatchedBy, "@")) {
		return fmt.Errorf("%w: call %s is %s, marked as being sent by %q: only a new call is, by a worker id without @", ErrInvalid, call.ID, st, call.DispatchedBy)
	}
	if (st == pipeline.CallSuspended) != (call.Parking != nil) {
		return fmt.Errorf("%w: call %s is %s with parking %v: parking goes with suspended, and only with it", ErrInvalid, call.ID, st, call.Parking != nil)
	}
	if !st.Terminal() && (len(call.Result) > 0 || call.Error != "") {
		return fmt.Errorf("%w: call %s is %s but carries a result or an error", ErrInvalid, call.ID, st)
	}
	if err := checkJSON("result of call "+call.ID, call.Result); err != nil {
		return err
	}
	return checkJSON("arguments of call "+call.ID, call.Arguments)
}

// StepCalls returns the calls of one step in index order. An unknown run is
// ErrNotFound; a step without calls gives an empty slice. A running run's
// step names its calls in its list; an ended run's lists are gone (lib.lua's
// retire), and its calls are found as RunCalls finds them.
func (s *Store) StepCalls(ctx context.Context, runID string, step int) ([]pipeline.ToolCall, error) {
	// The status after the list, as RunCalls reads them.
	var ids *redis.StringSliceCmd
	var status *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		ids = p.LRange(ctx, s.stepKey(runID, step), 0, -1)
		status = p.HGet(ctx, s.runKey(runID), "status")
		return nil
	})
	if errors.Is(status.Err(), redis.Nil) {
		return nil, fmt.Errorf("%w: run %s", ErrNotFound, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("calls of step %d of run %s: %w", step, runID, err)
	}
	if status.Val() != string(pipeline.RunDone) {
		return s.getCalls(ctx, runID, ids.Val())
	}
	all, err := s.conversationCalls(ctx, runID)
	return slices.DeleteFunc(all, func(c pipeline.ToolCall) bool { return c.Step != step }), err
}

// RunCalls returns every call of the run, ordered by step then index. An
// unknown run is ErrNotFound. A running run's step lists name its calls;
// an ended run's are gone (lib.lua's retire), and the assistant messages of
// its conversation name them (CommitStep writes each call with the message
// that names it; an id that names no call of the run, in a message of the
// input, is passed over).
func (s *Store) RunCalls(ctx context.Context, runID string) ([]pipeline.ToolCall, error) {
	stepStr, err := s.rdb.HGet(ctx, s.runKey(runID), "step").Result()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: run %s", ErrNotFound, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("calls of run %s: %w", runID, err)
	}
	last, err := strconv.Atoi(stepStr)
	if err != nil {
		return nil, fmt.Errorf("calls of run %s: step %q: %w", runID, stepStr, err)
	}
	// The status after the lists: a run retired before the status was read
	// may have lost its lists before they were; one that was not, did not.
	lists := make([]*redis.StringSliceCmd, last+1)
	var status *redis.StringCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for step := range lists {
			lists[step] = p.LRange(ctx, s.stepKey(runID, step), 0, -1)
		}
		status = p.HGet(ctx, s.runKey(runID), "status")
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("calls of run %s: %w", runID, err)
	}
	var calls []pipeline.ToolCall
	if status.Val() == string(pipeline.RunDone) {
		calls, err = s.conversationCalls(ctx, runID)
	} else {
		var ids []string
		for _, l := range lists {
			ids = append(ids, l.Val()...)
		}
		calls, err = s.getCalls(ctx, runID, ids)
	}
	if err != nil {
		return nil, err
	}
	sort.SliceStable(calls, func(i, j int) bool {
		if calls[i].Step != calls[j].Step {
			return calls[i].Step < calls[j].Step
		}
		return calls[i].Index < calls[j].Index
	})
	return calls, nil
}

// conversationCalls are the calls the assistant messages of the run's
// conversation propose, in the messages' order: every call of the run (an
// ended run has no step lists). An id that names no call of the run, in a
// message of the input, is passed over.
func (s *Store) conversationCalls(ctx context.Context, runID string) ([]pipeline.ToolCall, error) {
	msgs, err := s.Messages(ctx, runID)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
	}
	return s.getCalls(ctx, runID, ids)
}
