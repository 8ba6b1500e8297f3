package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// GetCall returns one call's record, or an error wrapping ErrNotFound.
func (s *Store) GetCall(ctx context.Context, runID, callID string) (pipeline.ToolCall, error) {
	h, err := s.rdb.HGetAll(ctx, s.callKey(runID, callID)).Result()
	if err != nil {
		return pipeline.ToolCall{}, fmt.Errorf("get call %s of run %s: %w", callID, runID, err)
	}
	return decodeCall(runID, callID, mapFields(h))
}

// getCalls reads calls by id in one round trip, in the order given. An id
// that names no call of the run is passed over.
func (s *Store) getCalls(ctx context.Context, runID string, ids []string) ([]pipeline.ToolCall, error) {
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.callKey(runID, id))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("calls of run %s: %w", runID, err)
	}
	out := make([]pipeline.ToolCall, 0, len(ids))
	for i, c := range cmds {
		if len(c.Val()) == 0 {
			continue
		}
		call, err := decodeCall(runID, ids[i], mapFields(c.Val()))
		if err != nil {
			return nil, err
		}
		out = append(out, call)
	}
	return out, nil
}

// ClaimCall takes the lease on a call for lease.Owner until lease.Until and
// counts the attempt: new or resuming calls, and running calls whose lease
// expired at now, become running; the event is tool_call.started (data
// {"attempt":n}), or tool_call.retried when n > 1.
//
// Refusals: ErrNotFound (no run or no call); ErrStale when the run is done or
// the call is suspended or terminal; ErrLeaseHeld when the call runs under a
// lease that has not expired. With ErrStale and ErrLeaseHeld the current
// call comes back too.
func (s *Store) ClaimCall(ctx context.Context, runID, callID string, lease Lease, now time.Time) (pipeline.ToolCall, error) {
	call, _, err := s.ClaimCallAndSiblings(ctx, runID, callID, lease, now, Siblings{})
	return call, err
}

// Siblings says which other calls of its step ClaimCallAndSiblings may
// claim with the call asked for.
type Siblings struct {
	Max       int      // at most this many (0: none)
	SkipTools []string // tools whose calls are left to their own requests (those with limits)
}

// ClaimCallAndSiblings is ClaimCall, and when the call's step runs its
// calls in parallel, it also claims, in the same script, up to sib.Max
// other calls of the step that are new and were never claimed, in the
// call's queue, of a tool not in sib.SkipTools (ADR 0025): a tool worker
// whose partition holds a step's requests one after the other claims them
// in one round trip, not one each. Each such call gets the lease of
// lease.Owner + "/" + k (k = 1, 2, ...), its attempt 1 and its
// tool_call.started event, as its own request's claim would have given it;
// it comes back in the step's order. A refusal claims no other call.
func (s *Store) ClaimCallAndSiblings(ctx context.Context, runID, callID string, lease Lease, now time.Time, sib Siblings) (pipeline.ToolCall, []pipeline.ToolCall, error) {
	if err := checkLease(lease, now); err != nil {
		return pipeline.ToolCall{}, nil, err
	}
	started, err := newEntry(-1, callID, pipeline.EventToolCallStarted, now, nil)
	if err != nil {
		return pipeline.ToolCall{}, nil, err
	}
	retried := started
	retried.Type = pipeline.EventToolCallRetried
	type siblings struct {
		Max   int                     `json:"max"`
		Fresh pipeline.ToolCallStatus `json:"fresh"`
		Skip  []string                `json:"skip"`
	}
	var others *siblings
	if sib.Max > 0 {
		others = &siblings{Max: sib.Max, Fresh: pipeline.CallNew, Skip: append([]string{}, sib.SkipTools...)}
	}
	what := "claim call " + callID + " of run " + runID
	v, err := s.call(ctx, s.scripts.claimCall, what, []string{s.runKey(runID), s.eventsKey(runID), s.callKey(runID, callID)}, struct {
		Owner     string                    `json:"owner"`
		Until     int64                     `json:"untilms"`
		Now       int64                     `json:"now"`
		Ended     []pipeline.RunStatus      `json:"ended"`
		Claimable []pipeline.ToolCallStatus `json:"claimable"`
		To        pipeline.ToolCallStatus   `json:"to"`
		Started   entry                     `json:"started"`
		Retried   entry                     `json:"retried"`
		Siblings  *siblings                 `json:"siblings,omitempty"`
	}{lease.Owner, toMillis(lease.Until), toMillis(now), finalRuns, claimableStatuses,
		moved(pipeline.CallNew, pipeline.CallRunning), started, retried, others})
	if err != nil {
		call, err := s.currentCall(ctx, runID, callID, err)
		return call, nil, err
	}
	if sib.Max == 0 {
		call, err := s.decodeCallReply(runID, callID, v)
		return call, nil, err
	}
	return s.decodeSiblingsReply(runID, callID, v)
}

// decodeSiblingsReply decodes claim_call's reply when it may claim other
// calls: {the call's hash, then id, hash of each other call}.
func (s *Store) decodeSiblingsReply(runID, callID string, v any) (pipeline.ToolCall, []pipeline.ToolCall, error) {
	list, err := replyList(v, 1)
	if err != nil || len(list)%2 != 1 {
		return pipeline.ToolCall{}, nil, fmt.Errorf("claim call %s of run %s: unexpected reply of %d entries (%v)", callID, runID, len(list), err)
	}
	call, err := s.decodeCallReply(runID, callID, list[0])
	if err != nil {
		return pipeline.ToolCall{}, nil, err
	}
	var sibs []pipeline.ToolCall
	for i := 1; i < len(list); i += 2 {
		id, ok := list[i].(string)
		if !ok {
			return pipeline.ToolCall{}, nil, fmt.Errorf("claim call %s of run %s: unexpected id %T", callID, runID, list[i])
		}
		c, err := s.decodeCallReply(runID, id, list[i+1])
		if err != nil {
			return pipeline.ToolCall{}, nil, err
		}
		sibs = append(sibs, c)
	}
	return call, sibs, nil
}

// RenewCallLease moves the lease of a running call the caller holds to
// lease.Until. ErrLeaseLost when the call is no longer running or another
// owner holds it; ErrNotFound when there is no such call.
func (s *Store) RenewCallLease(ctx context.Context, runID, callID string, lease Lease) error {
	what := fmt.Sprintf("renew lease of call %s of run %s for %s", callID, runID, lease.Owner)
	_, err := s.call(ctx, s.scripts.renewCallLease, what, []string{s.callKey(runID, callID)}, struct {
		Owner string                  `json:"owner"`
		Until int64                   `json:"untilms"`
		Held  pipeline.ToolCallStatus `json:"held"`
	}{lease.Owner, toMillis(lease.Until), pipeline.CallRunning})
	return err
}

// FinishCall records what owner's execution of a call came to: o.Status
// (succeeded, failed or suspended; anything else is ErrInvalid), the result
// and the error; the lease is cleared and tool_call.finished appended (data
// {"status","result"?,"error"?}), with o.State's plugin state updates and
// an action.failed event per o.Failed, in the same write.
//
// A suspended outcome (the tool itself returned pending) needs o.Parking,
// completed as CommitStep does (ParkedAt now when empty, ArgsHash of the call's current
// arguments when empty, ResumeMode replay when empty): its fields are
// written, tool_call.suspended (data = the parking) follows
// tool_call.finished, its approval request joins the run's outbox (an
// Outcome that AsksApproval), and the call enters the pending index after
// the script. Parking with another status is ErrInvalid.
//
// Refusals: ErrNotFound; ErrStale when the call is not running; ErrLeaseLost
// when another owner holds it (an expired lease nobody took over still
// counts as the caller's). It returns the call as the outcome left it, and
// whether its step's fan-in is due: false while other calls of a step that
// runs them in parallel are in flight (the last of them to finish says
// true); always true for a parked call and in a sequential step. A parked
// call is read back whole; any other is not (a result can be big): its
// ids, step, status, result, error and update time are set, its lease is
// cleared, and the rest (tool, arguments, attempts) is GetCall's to read.
func (s *Store) FinishCall(ctx context.Context, runID, callID, owner string, o CallOutcome, now time.Time) (Finished, error) {
	return s.finishCall(ctx, runID, callID, owner, pipeline.CallRunning, o, nil, now)
}

// GateCall records what ToolGate decided, judging again, for a call of a
// sequential step that has not run yet (status new) once the calls before
// it committed: o as FinishCall takes it (succeeded or failed for
// set_result and block, suspended with its parking for suspend, and the
// state updates and failed actions of the phase), gate the decision. A
// block also cancels the calls of cancel (the step's calls after it, those
// still new), each with error reason and a tool_call.finished. ErrStale
// when the call is no longer new.
func (s *Store) GateCall(ctx context.Context, runID, callID string, o CallOutcome, gate pipeline.GateAction, cancel []string, reason string, now time.Time) (Finished, error) {
	g := &gateArg{Gate: gate, Cancel: gateCancel{Expect: pipeline.CallNew, To: pipeline.CallCancelled, Error: reason,
		Calls: make([]cancelledCall, len(cancel))}}
	for i, id := range cancel {
		ev, err := finishedEntry(-1, id, pipeline.CallCancelled, nil, reason, now)
		if err != nil {
			return Finished{}, err
		}
		g.Cancel.Calls[i] = cancelledCall{ID: id, Event: ev}
	}
	return s.finishCall(ctx, runID, callID, "", pipeline.CallNew, o, g, now)
}

// gateArg is what finish_call writes for GateCall: the call's gate, and
// the calls a block cancels.
type gateArg struct {
	Gate   pipeline.GateAction `json:"gate"`
	Cancel gateCancel          `json:"cancel"`
}

type gateCancel struct {
	Expect pipeline.ToolCallStatus `json:"expect"`
	To     pipeline.ToolCallStatus `json:"to"`
	Error  string                  `json:"error"`
	Calls  []cancelledCall         `json:"calls"`
}

func (s *Store) finishCall(ctx context.Context, runID, callID, owner string, from pipeline.ToolCallStatus, o CallOutcome, gate *gateArg, now time.Time) (Finished, error) {
	if err := checkOutcome(from, o); err != nil {
		return Finished{}, err
	}
	what := "finish call " + callID + " of run " + runID + " by " + owner
	finished, err := finishedEntry(-1, callID, o.Status, o.Result, o.Error, now)
	if err != nil {
		return Finished{}, err
	}
	failed, err := failedEntries(-1, callID, o.Failed, now)
	if err != nil {
		return Finished{}, err
	}
	// A parking hashes the call's arguments, read before the script; the
	// script confirms they are unchanged (a decision may have replaced them
	// since the read), else the read is repeated. Other outcomes read
	// nothing first.
	var tenant string // of the run, for the pending index of a parked call
	for range 3 {
		var parked *parkedArg
		if o.Status == pipeline.CallSuspended {
			if parked, tenant, err = s.parkedOutcome(ctx, runID, callID, o.Parking, now); err != nil {
				return Finished{}, err
			}
		}
		v, err := s.call(ctx, s.scripts.finishCall, what, []string{s.callKey(runID, callID), s.eventsKey(runID), s.runKey(runID)}, struct {
			Owner    string                    `json:"owner"`
			Now      int64                     `json:"now"`
			Expect   pipeline.ToolCallStatus   `json:"expect"`
			To       pipeline.ToolCallStatus   `json:"to"`
			Result   string                    `json:"result"`
			Error    string                    `json:"error"`
			InFlight []pipeline.ToolCallStatus `json:"in_flight"`
			Event    entry                     `json:"event"`
			Parked   *parkedArg                `json:"parked,omitempty"`
			State    []stateUpdate             `json:"state"`
			Failed   []entry                   `json:"failed"`
			Gate     *gateArg                  `json:"gate,omitempty"`
		}{owner, toMillis(now), from, o.Status, string(o.Result), o.Error, inFlightStatuses, finished, parked,
			stateUpdates(o.State), failed, gate})
		if errors.Is(err, errRetry) {
			continue
		}
		if err != nil {
			return Finished{}, err
		}
		reply, err := replyList(v, 3)
		if err != nil {
			return Finished{}, fmt.Errorf("%s: %w", what, err)
		}
		f := Finished{FanIn: reply[1] != int64(0)}
		if parked == nil {
			step, err := strconv.Atoi(fmt.Sprint(reply[2]))
			if err != nil {
				return Finished{}, fmt.Errorf("%s: the call's step %v: %w", what, reply[2], err)
			}
			f.Call = pipeline.ToolCall{ID: callID, RunID: runID, Step: step, Status: o.Status, Result: o.Result,
				Error: o.Error, UpdatedAt: fromMillis(toMillis(now))}
			return f, nil
		}
		if f.Call, err = s.decodeCallReply(runID, callID, reply[0]); err != nil {
			return Finished{}, err
		}
		return f, s.indexPending(ctx, tenant, runID, f.Call)
	}
	return Finished{}, fmt.Errorf("%w: %s: the call's arguments kept changing", ErrStale, what)
}

// Finished is what FinishCall returns.
type Finished struct {
	// Call is the call as the outcome left it (see FinishCall for what a
	// call that is not parked carries).
	Call pipeline.ToolCall
	// FanIn says whether the step's fan-in is due: the step's last call in
	// flight finished, and whoever fans in reads the step.
	FanIn bool
}

// parkedArg is what finish_call writes of a suspended outcome: its
// tool_call.suspended entry, the call's arguments its args_hash was
// computed from, the parking's fields, and its approval request (none for
// a parking that asks nobody).
type parkedArg struct {
	Event  entry        `json:"event"`
	Args   string       `json:"args"`
	Fields []any        `json:"fields"`
	Ask    *approvalAsk `json:"ask,omitempty"`
}

// parkedOutcome completes p, the parking of a suspended outcome of call
// callID, from the call's arguments, read with the run's tenant in one
// round trip, and returns what finish_call writes of it and the tenant.
func (s *Store) parkedOutcome(ctx context.Context, runID, callID string, p *pipeline.Parking, now time.Time) (*parkedArg, string, error) {
	args, tenant, err := s.callArgs(ctx, runID, callID)
	if err != nil {
		return nil, "", err
	}
	parking, err := parkAt(callID, p, json.RawMessage(args), now)
	if err != nil {
		return nil, "", err
	}
	ev, err := newEntry(-1, callID, pipeline.EventToolCallParked, now, parkedOf(parking))
	if err != nil {
		return nil, "", err
	}
	ev.Ref = refCall
	return &parkedArg{Event: ev, Args: args, Fields: parkingFields(parking), Ask: askOf(callID, parking)}, tenant, nil
}

// finishedEntry is the tool_call.finished entry of call callID at step
// (-1: the script sets it) finishing as status with result and errText: a
// terminal call's result is the call's, which no longer changes (ref
// "call"); a call that parks may run again and finish with another, so
// its event keeps the result itself.
func finishedEntry(step int, callID string, status pipeline.ToolCallStatus, result json.RawMessage, errText string, now time.Time) (entry, error) {
	if !status.Terminal() {
		return newEntry(step, callID, pipeline.EventToolCallFinished, now, finishedData{Status: status, Result: result, Error: errText})
	}
	e, err := newEntry(step, callID, pipeline.EventToolCallFinished, now, finishedData{Status: status, Error: errText})
	e.Ref = refCall
	return e, err
}

// finishedData is the data of tool_call.finished.
type finishedData struct {
	Status pipeline.ToolCallStatus `json:"status"`
	Result json.RawMessage         `json:"result,omitempty"`
	Error  string                  `json:"error,omitempty"`
}

// checkOutcome lets a tool worker set only what the domain allows a running
// call to become, cancel excepted (cancelling is a decision, not an outcome).
func checkOutcome(from pipeline.ToolCallStatus, o CallOutcome) error {
	switch o.Status {
	case pipeline.CallSucceeded, pipeline.CallFailed, pipeline.CallSuspended:
	default:
		return fmt.Errorf("%w: a tool worker may not finish a call as %q", ErrInvalid, o.Status)
	}
	if !from.CanTransition(o.Status) {
		return fmt.Errorf("%w: %s → %s is not a call transition", ErrInvalid, from, o.Status)
	}
	if (o.Status == pipeline.CallSuspended) != (o.Parking != nil) {
		return fmt.Errorf("%w: outcome %s with parking %v: parking goes with suspended, and only with it", ErrInvalid, o.Status, o.Parking != nil)
	}
	return checkJSON("result", o.Result)
}

// callArgs reads the arguments of a call, and the tenant of its run (""
// when none is stored), in one round trip.
func (s *Store) callArgs(ctx context.Context, runID, callID string) (args, tenant string, err error) {
	var call *redis.SliceCmd
	var owner *redis.StringCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		call = p.HMGet(ctx, s.callKey(runID, callID), "status", "args")
		owner = p.HGet(ctx, s.runKey(runID), "tenant")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", "", fmt.Errorf("call %s of run %s: %w", callID, runID, err)
	}
	v := call.Val()
	if _, ok := v[0].(string); !ok {
		return "", "", fmt.Errorf("%w: call %s of run %s", ErrNotFound, callID, runID)
	}
	args, _ = v[1].(string)
	return args, owner.Val(), nil
}

// currentCall returns the call as it is now together with err, for
// refusals whose callers inspect the call (ErrStale, ErrLeaseHeld).
func (s *Store) currentCall(ctx context.Context, runID, callID string, err error) (pipeline.ToolCall, error) {
	if !isRefusal(err) {
		return pipeline.ToolCall{}, err
	}
	call, gerr := s.GetCall(ctx, runID, callID)
	if gerr != nil {
		return pipeline.ToolCall{}, err
	}
	return call, err
}

// isRefusal reports whether err is a refusal that comes back with the
// current record.
func isRefusal(err error) bool {
	return errors.Is(err, ErrStale) || errors.Is(err, ErrLeaseHeld)
}

func (s *Store) decodeCallReply(runID, callID string, v any) (pipeline.ToolCall, error) {
	h, err := pairs(v)
	if err != nil {
		return pipeline.ToolCall{}, fmt.Errorf("call %s of run %s: %w", callID, runID, err)
	}
	return decodeCall(runID, callID, h)
}

// ResumeTarget reads a run and one of its calls, what the step worker
// checks a resume decision against, and schedules the run's sweep at
// sweepAt (as ScheduleSweep), in one round trip: a decision schedules its
// run before it writes, so that a worker that dies after the write leaves
// a run the sweeper looks at. An unknown run is ErrNotFound; an unknown
// call is the zero ToolCall.
func (s *Store) ResumeTarget(ctx context.Context, runID, callID string, sweepAt time.Time) (pipeline.Run, pipeline.ToolCall, error) {
	var run, call *redis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, s.activeKey(), redis.Z{Score: float64(toMillis(sweepAt)), Member: runID})
		run = p.HGetAll(ctx, s.runKey(runID))
		call = p.HGetAll(ctx, s.callKey(runID, callID))
		return nil
	})
	if err != nil {
		return pipeline.Run{}, pipeline.ToolCall{}, fmt.Errorf("schedule run %s, read it and call %s: %w", runID, callID, err)
	}
	r, err := decodeRun(runID, mapFields(run.Val()))
	if err != nil {
		return pipeline.Run{}, pipeline.ToolCall{}, err
	}
	if len(call.Val()) == 0 {
		return r, pipeline.ToolCall{}, nil
	}
	c, err := decodeCall(runID, callID, mapFields(call.Val()))
	return r, c, err
}
