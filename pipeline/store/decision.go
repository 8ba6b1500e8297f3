package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Decision is a decision for one call of a run: resume it or cancel it.
// The JSON names are those of the decision message.
type Decision struct {
	ID        string          `json:"decision_id"`          // unique per run; a repeat is a duplicate
	CallID    string          `json:"call_id"`              // the call it decides
	Action    string          `json:"action"`               // ActionResume or ActionCancel
	Payload   json.RawMessage `json:"payload,omitempty"`    // resume: the arguments or the result, by resume mode
	ArgsHash  string          `json:"args_hash,omitempty"`  // optional: must match the parked call's
	DecidedBy string          `json:"decided_by,omitempty"` // who decided, as the decision claims
	SignedBy  string          `json:"signed_by,omitempty"`  // the producer whose key verified its signature; "" when not checked
	Reason    string          `json:"reason,omitempty"`     // why
	Timeout   bool            `json:"timeout,omitempty"`    // the sweeper applies the call's on_timeout

	// What the step worker found checking a resume against the parked call
	// it targets (CheckResume); never kept with a held decision, whose
	// checks are made again when it is applied.
	Refuse string `json:"-"` // reject the decision with this reason: its payload does not fit the tool
	Block  string `json:"-"` // apply it, but fail the call with this reason: ToolGate blocks the tool now

	// Dispatcher, when set, is the step worker instance that publishes the
	// call right after the decision: a call the decision leaves resuming is
	// marked as being sent by it (ADR 0019), so it needs no mark after its
	// publish. Only for a call that may be published at once (a step that
	// runs its calls in parallel); never kept with a held decision.
	Dispatcher string `json:"-"`

	// Upgrade, when set, is the agent version a waiting run the decision
	// wakes is moved to (runs.upgrade_waiting; package versions); "" keeps
	// the version it has. Never kept with a held decision.
	Upgrade string `json:"-"`
}

// DecisionOutcome is what ApplyDecision did with a decision.
type DecisionOutcome string

// The four outcomes of ApplyDecision.
const (
	DecisionApplied   DecisionOutcome = "applied"   // the call moved on; the decision id is seen
	DecisionHeld      DecisionOutcome = "held"      // the call has not parked yet; kept until it does or the hold ends
	DecisionRejected  DecisionOutcome = "rejected"  // recorded (decision.rejected), nothing else changed; the id is seen
	DecisionDuplicate DecisionOutcome = "duplicate" // the id was applied or rejected before; nothing written
)

// DecisionResult is what ApplyDecision did and the run and call as they are
// after it (Call is the zero value when the run has no such call).
type DecisionResult struct {
	Outcome DecisionOutcome
	Reason  string // why it was rejected or held; "" otherwise
	Run     pipeline.Run
	Call    pipeline.ToolCall
}

// HeldDecision is a decision held for a call that had not parked when it
// arrived, and the end of its hold.
type HeldDecision struct {
	Decision
	Until time.Time
}

// heldEntry is the JSON of a held decision in the run's held hash, whose
// decision_id the scripts read to tell whose entry it is.
type heldEntry struct {
	Decision
	HoldUntil int64 `json:"hold_until_ms"`
}

// Event data of decisions.
type (
	heldData struct {
		DecisionID string    `json:"decision_id"`
		HoldUntil  time.Time `json:"hold_until"`
	}
	rejectedData struct {
		DecisionID string `json:"decision_id"`
		Reason     string `json:"reason"`
	}
	appliedData struct {
		DecisionID string                  `json:"decision_id"`
		Action     string                  `json:"action"`
		DecidedBy  string                  `json:"decided_by"`
		SignedBy   string                  `json:"signed_by,omitempty"`
		Reason     string                  `json:"reason"`
		Timeout    bool                    `json:"timeout"`
		Status     pipeline.ToolCallStatus `json:"status"` // resuming for every resume, cancelled for a cancel
	}
	resumedData struct {
		DecisionID   string `json:"decision_id"`
		AgentVersion string `json:"agent_version,omitempty"` // the version the run moved to (Decision.Upgrade)
	}
)

// ApplyDecision applies decision d to call d.CallID of the run, in one
// script, checking in this order:
//
//   - no run: ErrNotFound, nothing written;
//   - d.ID applied or rejected before: DecisionDuplicate, nothing written;
//   - the run is done: rejected ("run is done");
//   - the call does not exist or is new or running (it may still park): held
//     until holdUntil (decision.held {decision_id, hold_until}), unless
//     another decision is held for it: rejected. The same decision held
//     already stays held, with its first hold, and nothing is written.
//     Held decisions are not seen: ApplyDecision again once the call has
//     parked applies them; DropHeld rejects them;
//   - the call is terminal or resuming: rejected ("call is <status>, not
//     suspended");
//   - d.ArgsHash is set and differs from the parked call's: rejected;
//   - a resume with d.Refuse (its payload does not fit the tool): rejected
//     with that reason;
//   - otherwise applied. Resume moves the call suspended → resuming, and
//     by the call's resume mode: replay leaves it resuming;
//     pass_decision_to_tool leaves it resuming with the payload as
//     arguments (the model's arguments kept as OrigArgs; no payload:
//     rejected); use_decision_as_result completes it at once, resuming →
//     succeeded, with the payload as result (JSON null when none), as the
//     transition table has no suspended → succeeded. A resume with d.Block
//     goes resuming → failed at once with that error and gate block, in any
//     mode: ToolGate refused the tool, nothing runs. Cancel → cancelled
//     with the error "cancelled by <decided_by>: <reason>" ("approval
//     timed out: <reason>" for d.Timeout). A resuming call starts its
//     attempts afresh. The decision is recorded on the call (Decision); a
//     waiting run goes back to running, its termination cleared.
//
// Events, applied: decision.applied {decision_id, action, decided_by,
// signed_by (when set), reason, timeout, status} (status resuming for every resume, cancelled for
// a cancel), run.resumed {decision_id} when the run was waiting,
// tool_call.finished {status, result?, error?} when the call is now
// terminal (succeeded for use_decision_as_result). Rejected:
// decision.rejected {decision_id, reason}. Applied and rejected decisions
// join the run's seen ids and leave the held hash when they were held. An
// applied decision takes the call out of the pending index after the
// script; the result is valid even when that write fails (err says so).
//
// A decision without id, call id or a known action, or with a payload that
// is not JSON, is ErrInvalid; a JSON null payload counts as none.
func (s *Store) ApplyDecision(ctx context.Context, runID string, d Decision, holdUntil, now time.Time) (DecisionResult, error) {
	res, err := s.applyDecision(ctx, runID, d, holdUntil, now)
	if err != nil || res.Outcome != DecisionApplied {
		return res, err
	}
	return res, s.unindexPending(ctx, res.Run.Tenant, runID, d.CallID)
}

// ApplyDecisionFirst is ApplyDecision without the write to the pending
// index that follows its script: for the handler of a decision, which makes
// it with ReadAfterDecision, in the round trip of its reconcile's read.
func (s *Store) ApplyDecisionFirst(ctx context.Context, runID string, d Decision, holdUntil, now time.Time) (DecisionResult, error) {
	return s.applyDecision(ctx, runID, d, holdUntil, now)
}

// ReadAfterDecision reads the run as Snapshot does, its outcomes claimed
// for claim, after decision res on call callID made with
// ApplyDecisionFirst, with the decision's writes to the global indexes
// ahead of the read in its round trip: an applied decision's call leaves
// the pending indexes, and the run's sweep is scheduled at sweepAt (after
// the decision's write: stepworker/decide.go says why).
func (s *Store) ReadAfterDecision(ctx context.Context, runID, callID string, res DecisionResult, sweepAt time.Time, claim time.Duration, now time.Time) (Snapshot, error) {
	return s.snapshot(ctx, runID, claim, now, func(p redis.Pipeliner) []redis.Cmder {
		var cmds []redis.Cmder
		if res.Outcome == DecisionApplied {
			cmds = s.unpend(ctx, p, res.Run.Tenant, runID, callID)
		}
		return append(cmds, p.ZAdd(ctx, s.activeKey(), redis.Z{Score: float64(toMillis(sweepAt)), Member: runID}))
	})
}

// applyDecision runs apply_decision.
func (s *Store) applyDecision(ctx context.Context, runID string, d Decision, holdUntil, now time.Time) (DecisionResult, error) {
	d, err := checkDecision(runID, d)
	if err != nil {
		return DecisionResult{}, err
	}
	arg, err := decisionArgOf(d, holdUntil, now)
	if err != nil {
		return DecisionResult{}, err
	}
	what := fmt.Sprintf("apply decision %s to call %s of run %s", d.ID, d.CallID, runID)
	v, err := s.call(ctx, s.scripts.applyDecision, what, s.decisionKeys(runID, d.CallID), arg)
	if err != nil {
		return DecisionResult{}, err
	}
	res, err := s.decodeDecisionReply(runID, d.CallID, v)
	if err != nil {
		return DecisionResult{}, fmt.Errorf("%s: %w", what, err)
	}
	return res, nil
}

// checkDecision refuses what no script could apply and normalizes the
// payload (JSON null is none).
func checkDecision(runID string, d Decision) (Decision, error) {
	if err := checkRunID(runID); err != nil {
		return d, err
	}
	if d.ID == "" {
		return d, fmt.Errorf("%w: decision without an id", ErrInvalid)
	}
	if err := checkCallID(d.CallID); err != nil {
		return d, fmt.Errorf("decision %s: %w", d.ID, err)
	}
	if d.Action != ActionResume && d.Action != ActionCancel {
		return d, fmt.Errorf("%w: decision %s: action %q is neither resume nor cancel", ErrInvalid, d.ID, d.Action)
	}
	if p := bytes.TrimSpace(d.Payload); len(p) == 0 || string(p) == "null" {
		d.Payload = nil
	}
	if err := checkJSON("payload of decision "+d.ID, d.Payload); err != nil {
		return d, err
	}
	return d, nil
}

// The moves a decision makes, from the run's and the call's tables: a
// decision applies to a call that may move to resuming; a resume moves it
// there, and on to failed when ToolGate blocks the tool now, or to
// succeeded in use_decision_as_result mode; a cancel moves it to
// cancelled. It is held for a call that has not parked yet (new or
// running: it may still move to suspended), rejected once the run has
// ended, and it wakes a waiting run.
var (
	decidable = statusesWhere(callStatuses, func(st pipeline.ToolCallStatus) bool {
		return st.CanTransition(pipeline.CallResuming)
	})
	parkable = statusesWhere([]pipeline.ToolCallStatus{pipeline.CallNew, pipeline.CallRunning}, func(st pipeline.ToolCallStatus) bool {
		return st.CanTransition(pipeline.CallSuspended)
	})
	resumedTo   = movedFrom(pipeline.CallResuming, decidable...)
	blockedTo   = movedFrom(pipeline.CallFailed, resumedTo)
	asResultTo  = movedFrom(pipeline.CallSucceeded, resumedTo)
	cancelledTo = movedFrom(pipeline.CallCancelled, decidable...)
	wake        = runMove{From: pipeline.RunWaiting, To: pipeline.RunRunning}.checked()
	endedRun    = runEnd(pipeline.RunDone)
)

// decisionArg is apply_decision's argument (the script names each field).
type decisionArg struct {
	ID        string                    `json:"id"`
	Call      string                    `json:"call"`
	Now       int64                     `json:"now"`
	Why       string                    `json:"why"`
	Held      string                    `json:"held"`
	ArgsHash  string                    `json:"args_hash"`
	Refuse    string                    `json:"refuse"`
	Ended     pipeline.RunStatus        `json:"ended"`
	Wake      runMove                   `json:"wake"`
	Upgrade   string                    `json:"upgrade"`
	Parkable  []pipeline.ToolCallStatus `json:"parkable"`
	Decidable []pipeline.ToolCallStatus `json:"decidable"`
	InFlight  []pipeline.ToolCallStatus `json:"in_flight"` // what the step's open count counts (lib.lua's move_open)
	To        pipeline.ToolCallStatus   `json:"to"`
	Set       map[string]string         `json:"set"`
	Resume    *resumeArg                `json:"resume,omitempty"`
	Events    decisionEntries           `json:"events"`
}

// resumeArg is what apply_decision needs of a resume that runs the call
// again, whose resume mode it reads.
type resumeArg struct {
	Payload string                  `json:"payload,omitempty"`
	Result  pipeline.ToolCallStatus `json:"result"`
	Sent    string                  `json:"sent,omitempty"`
}

// decisionEntries are the events apply_decision may append; the script
// sets their step and the rejection's reason.
type decisionEntries struct {
	Held     entry  `json:"held"`
	Rejected entry  `json:"rejected"`
	Applied  entry  `json:"applied"`
	Resumed  entry  `json:"resumed"`
	Finished *entry `json:"finished,omitempty"`
	Result   *entry `json:"result,omitempty"`
}

// decisionArgOf is apply_decision's argument for d.
func decisionArgOf(d Decision, holdUntil, now time.Time) (decisionArg, error) {
	held, err := json.Marshal(heldEntry{Decision: d, HoldUntil: toMillis(holdUntil)})
	if err != nil {
		return decisionArg{}, fmt.Errorf("%w: decision %s: %v", ErrInvalid, d.ID, err)
	}
	arg := decisionArg{
		ID: d.ID, Call: d.CallID, Now: toMillis(now), Why: appliedReason(d),
		Held: string(held), ArgsHash: d.ArgsHash,
		Ended: endedRun, Wake: wake, Upgrade: d.Upgrade, Parkable: parkable, Decidable: decidable, InFlight: inFlightStatuses,
		// dec_signed is written even when empty: a call decided again
		// (resumed, parked anew, then timed out) must not keep an earlier
		// decision's signer.
		Set: map[string]string{
			"dec_id": d.ID, "dec_action": d.Action, "dec_by": d.DecidedBy, "dec_reason": d.Reason,
			"dec_timeout": boolFlag(d.Timeout), "dec_signed": d.SignedBy, "updated_at": strconv.FormatInt(toMillis(now), 10),
		},
	}
	var ends finishedData // how the decision ends the call; none when it runs again
	reported := resumedTo // the status decision.applied reports: resuming for every resume
	switch {
	case d.Action == ActionCancel:
		arg.To, reported = cancelledTo, cancelledTo
		ends = finishedData{Status: cancelledTo, Error: cancelError(d)}
	case d.Block != "":
		arg.To, arg.Refuse = blockedTo, d.Refuse
		ends = finishedData{Status: blockedTo, Error: d.Block}
		arg.Set["gate"] = string(pipeline.GateBlock)
	default:
		arg.To, arg.Refuse = resumedTo, d.Refuse
		arg.Resume = &resumeArg{Payload: string(d.Payload), Result: asResultTo}
		if d.Dispatcher != "" {
			arg.Resume.Sent = beingSentMark(decisionGeneration(d.ID), now, d.Dispatcher)
		}
		result, err := finishedEntry(-1, d.CallID, asResultTo, nil, "", now)
		if err != nil {
			return decisionArg{}, err
		}
		arg.Events.Result = &result
	}
	if ends.Status != "" {
		arg.Set["error"] = ends.Error
		finished, err := finishedEntry(-1, d.CallID, ends.Status, nil, ends.Error, now)
		if err != nil {
			return decisionArg{}, err
		}
		arg.Events.Finished = &finished
	}
	evs := []struct {
		to   *entry
		typ  pipeline.EventType
		data any
	}{
		{&arg.Events.Held, pipeline.EventDecisionHeld, heldData{DecisionID: d.ID, HoldUntil: holdUntil.UTC()}},
		{&arg.Events.Rejected, pipeline.EventDecisionRejected, nil},
		{&arg.Events.Applied, pipeline.EventDecisionApplied, appliedData{
			DecisionID: d.ID, Action: d.Action, DecidedBy: d.DecidedBy, SignedBy: d.SignedBy,
			Reason: d.Reason, Timeout: d.Timeout, Status: reported,
		}},
		{&arg.Events.Resumed, pipeline.EventRunResumed, resumedData{DecisionID: d.ID, AgentVersion: d.Upgrade}},
	}
	for _, ev := range evs {
		if *ev.to, err = newEntry(-1, d.CallID, ev.typ, now, ev.data); err != nil {
			return decisionArg{}, err
		}
	}
	return arg, nil
}

// appliedReason is the reason the outcome of decision d records when it is
// applied: none for a producer's decision; for the sweeper's on_timeout
// one, that the deadline passed and what it did, so a decider that asked
// for the call sees why its request closed.
func appliedReason(d Decision) string {
	if d.Timeout {
		return "deadline passed: on_timeout " + d.Action
	}
	return ""
}

// cancelError is the error of a call a decision cancels.
func cancelError(d Decision) string {
	if d.Timeout {
		return withReason("approval timed out", d.Reason)
	}
	if d.DecidedBy == "" {
		return withReason("cancelled", d.Reason)
	}
	return withReason("cancelled by "+d.DecidedBy, d.Reason)
}

// withReason is what, followed by ": reason" when there is one.
func withReason(what, reason string) string {
	if reason == "" {
		return what
	}
	return what + ": " + reason
}

func boolFlag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func (s *Store) decisionKeys(runID, callID string) []string {
	return []string{s.runKey(runID), s.callKey(runID, callID), s.eventsKey(runID), s.decisionsKey(runID), s.heldKey(runID)}
}

func (s *Store) decodeDecisionReply(runID, callID string, v any) (DecisionResult, error) {
	reply, err := replyList(v, 4)
	if err != nil {
		return DecisionResult{}, err
	}
	outcome, ok1 := reply[0].(string)
	reason, ok2 := reply[1].(string)
	if !ok1 || !ok2 {
		return DecisionResult{}, fmt.Errorf("unexpected decision reply %v", reply[:2])
	}
	run, err := s.decodeRunReply(runID, reply[2])
	if err != nil {
		return DecisionResult{}, err
	}
	res := DecisionResult{Outcome: DecisionOutcome(outcome), Reason: reason, Run: run}
	h, err := pairs(reply[3])
	if err != nil {
		return DecisionResult{}, fmt.Errorf("call %s of run %s: %w", callID, runID, err)
	}
	if h.size() > 0 {
		if res.Call, err = decodeCall(runID, callID, h); err != nil {
			return DecisionResult{}, err
		}
	}
	return res, nil
}

// HeldDecisions returns the decisions held for calls of the run that had not
// parked when they arrived, sorted by call id, each with the end of its
// hold. The caller (the sweeper, or the handler that sees a call park)
// applies them with ApplyDecision or rejects them with DropHeld. An unknown
// run is ErrNotFound.
func (s *Store) HeldDecisions(ctx context.Context, runID string) ([]HeldDecision, error) {
	var exists *redis.IntCmd
	var held *redis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		exists = p.Exists(ctx, s.runKey(runID))
		held = p.HGetAll(ctx, s.heldKey(runID))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("held decisions of run %s: %w", runID, err)
	}
	if exists.Val() == 0 {
		return nil, fmt.Errorf("%w: run %s", ErrNotFound, runID)
	}
	return decodeHeld(runID, held.Val())
}

func decodeHeld(runID string, h map[string]string) ([]HeldDecision, error) {
	out := make([]HeldDecision, 0, len(h))
	for callID, raw := range h {
		var e heldEntry
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return nil, fmt.Errorf("held decision for call %s of run %s: %w", callID, runID, err)
		}
		out = append(out, HeldDecision{Decision: e.Decision, Until: fromMillis(e.HoldUntil)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CallID < out[j].CallID })
	return out, nil
}

// DropHeld rejects decision decisionID held for call callID: it leaves the
// held hash, joins the seen ids (a redelivery is then a duplicate) and
// decision.rejected {decision_id, reason} is appended. ErrNotFound when
// there is no run; ErrStale, with nothing written, when that decision is no
// longer held for the call (applied, rejected or dropped meanwhile).
func (s *Store) DropHeld(ctx context.Context, runID, callID, decisionID, reason string, now time.Time) error {
	if err := checkRunID(runID); err != nil {
		return err
	}
	if err := checkCallID(callID); err != nil {
		return err
	}
	if decisionID == "" {
		return fmt.Errorf("%w: decision without an id", ErrInvalid)
	}
	ev, err := newEntry(-1, callID, pipeline.EventDecisionRejected, now, rejectedData{DecisionID: decisionID, Reason: reason})
	if err != nil {
		return err
	}
	what := fmt.Sprintf("drop held decision %s of call %s of run %s", decisionID, callID, runID)
	_, err = s.call(ctx, s.scripts.dropHeld, what, s.decisionKeys(runID, callID), struct {
		ID     string `json:"id"`
		Call   string `json:"call"`
		Reason string `json:"reason"`
		Event  entry  `json:"event"`
	}{decisionID, callID, reason, ev})
	return err
}
