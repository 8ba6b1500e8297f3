package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// The actions of a decision, and of a parked call's on_timeout.
const (
	ActionResume = "resume"
	ActionCancel = "cancel"
)

// parkAt checks the parking of a call that is being suspended and completes
// it: an empty ParkedAt (or one after now) becomes now (a ParkedAt given is
// when the call was decided to park, from which its Deadline counts), an
// empty ArgsHash becomes pipeline.ArgsHash(args), an empty ResumeMode
// becomes replay. A nil parking, an empty ticket, an unknown
// resume mode or on_timeout, or arguments that do not parse are ErrInvalid.
func parkAt(callID string, p *pipeline.Parking, args json.RawMessage, now time.Time) (pipeline.Parking, error) {
	if p == nil {
		return pipeline.Parking{}, fmt.Errorf("%w: call %s is suspended without its parking", ErrInvalid, callID)
	}
	out := *p
	if out.Ticket == "" {
		return pipeline.Parking{}, fmt.Errorf("%w: call %s is parked without a ticket", ErrInvalid, callID)
	}
	mode, err := pipeline.ParseResumeMode(string(out.ResumeMode))
	if err != nil {
		return pipeline.Parking{}, fmt.Errorf("%w: call %s: %v", ErrInvalid, callID, err)
	}
	out.ResumeMode = mode
	switch out.OnTimeout {
	case "", ActionResume, ActionCancel:
	default:
		return pipeline.Parking{}, fmt.Errorf("%w: call %s: on_timeout %q is neither resume nor cancel", ErrInvalid, callID, out.OnTimeout)
	}
	if out.ArgsHash == "" {
		h, err := pipeline.ArgsHash(args)
		if err != nil {
			return pipeline.Parking{}, fmt.Errorf("%w: arguments of call %s: %v", ErrInvalid, callID, err)
		}
		out.ArgsHash = h
	}
	if out.ParkedAt.IsZero() || out.ParkedAt.After(now) {
		out.ParkedAt = now
	}
	return out, nil
}

// indexPending adds parked calls to the pending index. The index is global
// (another cluster slot than the run's keys), so it is written after the
// script that parked them; a process that dies in between leaves a call out
// of ListPending without a run filter until it is parked again, while
// ListPending with a run filter reads the run's calls and still shows it.
func (s *Store) indexPending(ctx context.Context, runID string, calls ...pipeline.ToolCall) error {
	var zs []redis.Z
	for _, c := range calls {
		if c.Status == pipeline.CallSuspended && c.Parking != nil {
			zs = append(zs, redis.Z{Score: float64(toMillis(c.Parking.ParkedAt)), Member: pendingMember(runID, c.ID)})
		}
	}
	if len(zs) == 0 {
		return nil
	}
	if err := s.rdb.ZAdd(ctx, s.pendingKey(), zs...).Err(); err != nil {
		return fmt.Errorf("index pending calls of run %s: %w", runID, err)
	}
	return nil
}

// unindexPending takes calls out of the pending index (absent ones are not
// an error). Entries it misses are dropped by ListPending when it finds the
// call no longer suspended.
func (s *Store) unindexPending(ctx context.Context, runID string, callIDs ...string) error {
	if len(callIDs) == 0 {
		return nil
	}
	members := make([]any, len(callIDs))
	for i, id := range callIDs {
		members[i] = pendingMember(runID, id)
	}
	if err := s.rdb.ZRem(ctx, s.pendingKey(), members...).Err(); err != nil {
		return fmt.Errorf("unindex pending calls of run %s: %w", runID, err)
	}
	return nil
}
