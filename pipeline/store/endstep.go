package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// EndStep ends step `step` once every call in it is terminal: it appends
// end.ToolMessages and the step.ended event, then either ends the run
// (end.Finish: status done, the termination, run.finished; the run leaves
// the sweeper's index) or moves it to step+1 (step state pending, attempts
// 0, lease cleared). It returns the run as it then is and, when it ended
// the run, the decisions still held for it (which no decision can join
// once the run is done).
//
// Refusals: ErrNotFound; ErrStale (with the current run) when the run is not
// running, at another step, the step is not committed, or a call of the step
// is not terminal (the first such call is named). end.Finish must end the
// run (a suspended reason is ErrInvalid).
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
	build, err := s.endStepArgs(runID, step, end, next, now)
	if err != nil {
		return pipeline.Run{}, nil, nil, err
	}
	what := fmt.Sprintf("end step %d of run %s", step, runID)
	// The script checks every call of the step, so their keys must be
	// declared: the step list as the caller read it (end.CallIDs), or as
	// read here, and the script confirms it is unchanged. It is fixed once
	// the step is committed, so a retry is only needed when the read raced
	// the commit.
	ids := end.CallIDs
	for range 3 {
		if ids == nil {
			var err error
			if ids, err = s.rdb.LRange(ctx, s.stepKey(runID, step), 0, -1).Result(); err != nil {
				return pipeline.Run{}, nil, nil, fmt.Errorf("%s: %w", what, err)
			}
		}
		var cached conversation
		var read *redis.StringSliceCmd
		v, err := s.evalAmong(ctx, build(ids), func(p redis.Pipeliner, eval func()) {
			eval()
			if next != nil {
				cached, read = s.readConversation(ctx, p, runID)
			}
		})
		if err != nil {
			err = scriptError(err, what)
		}
		if errors.Is(err, errRetry) {
			ids = nil
			continue
		}
		if err != nil {
			run, err := s.currentRun(ctx, runID, err)
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
	run, err := s.currentRun(ctx, runID, fmt.Errorf("%w: %s: the step's call list kept changing", ErrStale, what))
	return run, nil, nil, err
}

// endStepArgs checks end and prepares end_step's events and messages, and
// the claim of step+1 for next when it is not nil; the function it returns
// gives the script's command for the step's call ids.
func (s *Store) endStepArgs(runID string, step int, end StepEnd, next *Lease, now time.Time) (func(ids []string) script, error) {
	finish, t := "0", pipeline.Termination{}
	if end.Finish != nil {
		if err := checkTermination(*end.Finish); err != nil {
			return nil, err
		}
		finish, t = "1", *end.Finish
	}
	evEnded, err := newEvent(step, "", pipeline.EventStepEnded, now, nil)
	if err != nil {
		return nil, err
	}
	evFinished := "" // the script reads it only when it ends the run
	if end.Finish != nil {
		if evFinished, err = newEvent(step, "", pipeline.EventRunFinished, now, t); err != nil {
			return nil, err
		}
	}
	claimer, until, started := "", int64(0), ""
	if next != nil {
		if err := checkLease(*next, now); err != nil {
			return nil, err
		}
		if started, err = newEvent(step+1, "", pipeline.EventStepStarted, now, json.RawMessage(`{"attempt":1}`)); err != nil {
			return nil, err
		}
		claimer, until = next.Owner, toMillis(next.Until)
	}
	msgs := make([]string, len(end.ToolMessages))
	for i, m := range end.ToolMessages {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("%w: tool message %d: %v", ErrInvalid, i, err)
		}
		msgs[i] = string(b)
	}
	return func(ids []string) script {
		seen := "" // only for the ids the caller saw terminal, not for ones read here
		if !end.SeenTerminal.IsZero() && end.CallIDs != nil && slices.Equal(ids, end.CallIDs) {
			seen = strconv.FormatInt(toMillis(end.SeenTerminal), 10)
		}
		cmd := newScript(s.scripts.endStep, 5+2*len(ids)+14+len(msgs)+2*len(end.State)+1)
		cmd.key(s.runKey(runID))
		cmd.key(s.eventsKey(runID))
		cmd.key(s.msgsKey(runID))
		cmd.key(s.stepKey(runID, step))
		for _, id := range ids {
			cmd.key(s.callKey(runID, id))
		}
		s.withState(&cmd, runID)
		cmd.arg(step, toMillis(now), s.terminalCalls, finish, string(t.Reason), t.Code, t.Detail,
			evEnded, evFinished, claimer, until, started, seen, len(ids))
		for _, id := range ids {
			cmd.arg(id)
		}
		for _, m := range msgs {
			cmd.arg(m)
		}
		withUpdates(&cmd, end.State)
		return cmd
	}, nil
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
	ev, err := newEvent(step, "", pipeline.EventRunFinished, now,
		pipeline.Termination{Reason: pipeline.ReasonSuspended})
	if err != nil {
		return pipeline.Run{}, err
	}
	what := fmt.Sprintf("set run %s waiting at step %d", runID, step)
	// As in EndStep: the script checks every call of the step, so it gets
	// the list as read here and confirms it is unchanged.
	for range 3 {
		ids, err := s.rdb.LRange(ctx, s.stepKey(runID, step), 0, -1).Result()
		if err != nil {
			return pipeline.Run{}, fmt.Errorf("%s: %w", what, err)
		}
		keys := []string{s.runKey(runID), s.eventsKey(runID), s.stepKey(runID, step)}
		args := []any{step, toMillis(now), s.busyCalls, ev, len(ids)}
		for _, id := range ids {
			keys = append(keys, s.callKey(runID, id))
			args = append(args, id)
		}
		seq := "0"
		if sequential {
			seq = "1"
		}
		args = append(args, seq)
		v, err := s.eval(ctx, s.scripts.setWaiting, what, keys, args...)
		if errors.Is(err, errRetry) {
			continue
		}
		if err != nil {
			return s.currentRun(ctx, runID, err)
		}
		return s.decodeRunReply(runID, v)
	}
	return s.currentRun(ctx, runID, fmt.Errorf("%w: %s: the step's call list kept changing", ErrStale, what))
}
