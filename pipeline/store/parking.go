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

// indexPending adds parked calls of a run of tenant to the pending index,
// and to its tenant's when the tenant has one (tenantIndexed). The indexes
// are global (other cluster slots than the run's keys), so they are written
// after the script that parked the calls; a process that dies in between
// leaves them out until the run's next reconcile that finds it waiting
// (RescheduleWaiting), while ListPending with a run filter reads the run's
// calls and shows them all along.
func (s *Store) indexPending(ctx context.Context, tenant, runID string, calls ...pipeline.ToolCall) error {
	zs := pendingEntries(runID, calls)
	if len(zs) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		s.queuePending(ctx, p, tenant, zs)
		return nil
	})
	if err != nil {
		return fmt.Errorf("index pending calls of run %s: %w", runID, err)
	}
	return nil
}

// pendingEntries are the entries in the pending indexes of the parked calls
// among calls of a run.
func pendingEntries(runID string, calls []pipeline.ToolCall) []redis.Z {
	var zs []redis.Z
	for _, c := range calls {
		if c.Status == pipeline.CallSuspended && c.Parking != nil && c.Parking.AwaitsDecision() {
			zs = append(zs, redis.Z{Score: float64(toMillis(c.Parking.ParkedAt)), Member: pendingMember(runID, c.ID)})
		}
	}
	return zs
}

// queuePending queues in p the entries zs of a run of tenant in the pending
// indexes (an indexed call stays as it is), and returns the commands.
func (s *Store) queuePending(ctx context.Context, p redis.Pipeliner, tenant string, zs []redis.Z) []redis.Cmder {
	cmds := []redis.Cmder{p.ZAdd(ctx, s.pendingKey(), zs...)}
	if tenantIndexed(tenant) {
		cmds = append(cmds, p.ZAdd(ctx, s.tenantPendingKey(tenant), zs...))
	}
	return cmds
}

// unindexPending takes calls of a run of tenant out of the pending indexes
// (absent ones are not an error). Entries it misses are dropped by
// ListPending when it finds the call no longer suspended.
func (s *Store) unindexPending(ctx context.Context, tenant, runID string, callIDs ...string) error {
	if len(callIDs) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		s.unpend(ctx, p, tenant, runID, callIDs...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("unindex pending calls of run %s: %w", runID, err)
	}
	return nil
}

// unpend queues in p the removal of calls of a run of tenant from the
// pending indexes, and returns the commands.
func (s *Store) unpend(ctx context.Context, p redis.Pipeliner, tenant, runID string, callIDs ...string) []redis.Cmder {
	members := make([]any, len(callIDs))
	for i, id := range callIDs {
		members[i] = pendingMember(runID, id)
	}
	cmds := []redis.Cmder{p.ZRem(ctx, s.pendingKey(), members...)}
	if tenantIndexed(tenant) {
		cmds = append(cmds, p.ZRem(ctx, s.tenantPendingKey(tenant), members...))
	}
	return cmds
}
