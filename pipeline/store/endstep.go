package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// EndStep ends step `step` once every call in it is terminal: it appends
// end.ToolMessages and the step.ended event, then either ends the run
// (end.Finish: status done, the termination, run.finished; its keys then
// expire after the retention) or moves it to step+1 (step state pending,
// attempts 0, lease cleared). It returns the run as it then is and, when
// it ended the run, the decisions still held for it (which no decision
// can join once the run is done). The script reads the step's calls
// itself and decides from what it reads.
//
// Refusals: ErrNotFound; ErrStale (with the current run) when the run is not
// running, at another step, the step is not committed, its calls are not
// end.CallIDs (when given), or a call of the step is not terminal (the
// first such call is named). end.Finish must end the run (a suspended
// reason is ErrInvalid).
func (s *Store) EndStep(ctx context.Context, runID string, step int, end StepEnd, now time.Time) (pipeline.Run, []HeldDecision, error) {
	run, held, _, err := s.endStep(ctx, runID, step, end, nil, now)
	return run, held, err
}

// Claimed is a step claimed together with the end of the step before it:
// the run as the claim left it and its conversation. The conversation is
// shared with the store's cache of the conversations it read, as every
// claim's is: a caller reads it, and may append to it (which copies: its
// capacity is its length), but does not change its messages.
type Claimed struct {
	Run      pipeline.Run
	Messages []pipeline.Message
}

// EndStepAndClaim is EndStep for a caller that runs the next step itself:
// when the run goes on, the same script claims step+1 for lease (its first
// attempt, as ClaimStepWithMessages claims it), and the run's conversation
// is read in the same round trip. The claim is nil when the run ended. A
// refused end claims nothing: whoever ended the step sees to what follows.
func (s *Store) EndStepAndClaim(ctx context.Context, runID string, step int, end StepEnd, lease Lease, now time.Time) (pipeline.Run, *Claimed, error) {
	run, _, claimed, err := s.endStep(ctx, runID, step, end, &lease, now)
	return run, claimed, err
}

// endStep is EndStep, and the claim of step+1 for next when it is not nil.
func (s *Store) endStep(ctx context.Context, runID string, step int, end StepEnd, next *Lease, now time.Time) (pipeline.Run, []HeldDecision, *Claimed, error) {
	if next != nil && end.Finish != nil {
		next = nil
	}
	cmd, err := s.endStepArgs(runID, step, end, next, now)
	if err != nil {
		return pipeline.Run{}, nil, nil, err
	}
	var cached conversation
	var read *redis.StringSliceCmd
	v, err := s.evalAmong(ctx, cmd, func(p redis.Pipeliner, eval func()) {
		eval()
		if next != nil {
			cached, read = s.readConversation(ctx, p, runID)
		}
	})
	if err != nil {
		run, err := s.currentRun(ctx, runID, scriptError(err, "end step "+strconv.Itoa(step)+" of run "+runID))
		return run, nil, nil, err
	}
	run, held, err := s.decodeEnded(runID, v)
	if err != nil || next == nil {
		return run, held, nil, err
	}
	msgs, err := s.joinConversation(ctx, run, cached, read)
	if err != nil {
		return run, held, nil, err
	}
	return run, held, &Claimed{Run: run, Messages: msgs}, nil
}

// endStepArgs checks end and gives end_step's command: the step's end,
// with the run's termination when end.Finish says so, else the next step
// as Go moved it (claimed for next when it is not nil).
func (s *Store) endStepArgs(runID string, step int, end StepEnd, next *Lease, now time.Time) (script, error) {
	type finish struct {
		Status pipeline.RunStatus         `json:"status"`
		Reason pipeline.TerminationReason `json:"reason"`
		Code   string                     `json:"code"`
		Detail string                     `json:"detail"`
		Event  entry                      `json:"event"`
	}
	type nextStep struct {
		State    pipeline.StepState `json:"state"`
		Attempts int                `json:"attempts"`
		Owner    string             `json:"owner"`
		Until    int64              `json:"untilms"`
		Event    *entry             `json:"event,omitempty"`
	}
	arg := struct {
		Step   int   `json:"step"`
		Now    int64 `json:"now"`
		Expect struct {
			Status pipeline.RunStatus `json:"status"`
			State  pipeline.StepState `json:"state"`
		} `json:"expect"`
		Terminal []pipeline.ToolCallStatus `json:"terminal"`
		IDs      []string                  `json:"ids"`
		Messages []string                  `json:"messages"`
		Updates  []stateUpdate             `json:"updates"`
		Failed   []entry                   `json:"failed"`
		Ended    entry                     `json:"ended"`
		Finish   *finish                   `json:"finish,omitempty"`
		Next     *nextStep                 `json:"next,omitempty"`
	}{Step: step, Now: toMillis(now), Terminal: terminalStatuses, IDs: end.CallIDs,
		Messages: make([]string, len(end.ToolMessages)), Updates: stateUpdates(end.State)}
	arg.Expect.Status, arg.Expect.State = pipeline.RunRunning, pipeline.StepTools
	var err error
	if arg.Failed, err = failedEntries(step, "", end.Failed, now); err != nil {
		return script{}, err
	}
	if arg.Ended, err = newEntry(step, "", pipeline.EventStepEnded, now, nil); err != nil {
		return script{}, err
	}
	switch {
	case end.Finish != nil:
		t := *end.Finish
		if err := checkTermination(t); err != nil {
			return script{}, err
		}
		ev, err := newEntry(step, "", pipeline.EventRunFinished, now, t)
		if err != nil {
			return script{}, err
		}
		arg.Finish = &finish{moved(pipeline.RunRunning, pipeline.RunDone), t.Reason, t.Code, t.Detail, ev}
	case next == nil:
		arg.Next = &nextStep{State: moved(pipeline.StepTools, pipeline.StepPending)}
	default:
		if err := checkLease(*next, now); err != nil {
			return script{}, err
		}
		ev, err := newEntry(step+1, "", pipeline.EventStepStarted, now, json.RawMessage(`{"attempt":1}`))
		if err != nil {
			return script{}, err
		}
		// The next step enters pending and is claimed in the same write.
		state := moved(moved(pipeline.StepTools, pipeline.StepPending), pipeline.StepInferring)
		arg.Next = &nextStep{State: state, Attempts: 1, Owner: next.Owner, Until: toMillis(next.Until), Event: &ev}
	}
	for i, m := range end.ToolMessages {
		b, err := json.Marshal(m)
		if err != nil {
			return script{}, fmt.Errorf("%w: tool message %d: %v", ErrInvalid, i, err)
		}
		arg.Messages[i] = string(b)
	}
	c, err := callOf(s.scripts.endStep, []string{s.runKey(runID), s.eventsKey(runID), s.msgsKey(runID), s.stateKey(runID)}, arg)
	if err != nil {
		return script{}, fmt.Errorf("end step %d of run %s: %w", step, runID, err)
	}
	return c, nil
}

// decodeEnded decodes end_step's reply: the run, and its held decisions.
func (s *Store) decodeEnded(runID string, v any) (pipeline.Run, []HeldDecision, error) {
	reply, err := replyList(v, 2)
	if err != nil {
		return pipeline.Run{}, nil, fmt.Errorf("end step of run %s: %w", runID, err)
	}
	run, err := s.decodeRunReply(runID, reply[0])
	if err != nil {
		return pipeline.Run{}, nil, err
	}
	held, err := flatMap(reply[1])
	if err != nil {
		return pipeline.Run{}, nil, err
	}
	hd, err := decodeHeld(runID, held)
	return run, hd, err
}

// SetWaiting moves a running run to waiting once nothing of step `step`
// runs any more and at least one of its calls is suspended (the seeds'
// derive_run_status says waiting): termination reason suspended (no code or
// detail), event run.finished with data {"reason":"suspended"}. A decision
// (ApplyDecision) moves the run back to running.
//
// Refusals: ErrNotFound; ErrStale (with the current run) when the run is not
// running, at another step, the step is not committed, a call of the step is
// new, running or resuming (the first such call is named), or none is
// suspended. With sequential, only the calls up to the first one that is
// not terminal count: the ones after it wait for it, so a suspended call
// there makes the run wait.
func (s *Store) SetWaiting(ctx context.Context, runID string, step int, sequential bool, now time.Time) (pipeline.Run, error) {
	t := pipeline.Termination{Reason: pipeline.ReasonSuspended}
	ev, err := newEntry(step, "", pipeline.EventRunFinished, now, t)
	if err != nil {
		return pipeline.Run{}, err
	}
	type state struct {
		Status pipeline.RunStatus `json:"status"`
		State  pipeline.StepState `json:"state"`
	}
	what := fmt.Sprintf("set run %s waiting at step %d", runID, step)
	v, err := s.call(ctx, s.scripts.setWaiting, what, []string{s.runKey(runID), s.eventsKey(runID)}, struct {
		Step       int                        `json:"step"`
		Now        int64                      `json:"now"`
		Expect     state                      `json:"expect"`
		To         pipeline.RunStatus         `json:"to"`
		Reason     pipeline.TerminationReason `json:"reason"`
		InFlight   []pipeline.ToolCallStatus  `json:"in_flight"`
		Parked     pipeline.ToolCallStatus    `json:"parked"`
		Sequential bool                       `json:"sequential"`
		Event      entry                      `json:"event"`
	}{step, toMillis(now), state{pipeline.RunRunning, pipeline.StepTools}, moved(pipeline.RunRunning, pipeline.RunWaiting),
		t.Reason, inFlightStatuses, pipeline.CallSuspended, sequential, ev})
	if err != nil {
		return s.currentRun(ctx, runID, err)
	}
	return s.decodeRunReply(runID, v)
}
