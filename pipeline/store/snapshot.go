package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Snapshot is what a reconcile reads of a run: its record, the calls of its
// current step in index order, the decisions held for its calls, and when
// the sweeper looks at it next (zero: it is not scheduled).
type Snapshot struct {
	Run       pipeline.Run
	Calls     []pipeline.ToolCall
	Held      []HeldDecision
	Scheduled time.Time
	Outcomes  []Outcome // decision outcomes not yet published (outcomes.go)
}

// Snapshot reads the run, the calls of its current step, its held
// decisions and its sweep time. stepHint is the step the caller expects the run to be at (-1
// for none): with the right hint the read takes two round trips, otherwise
// three. The three reads are not one atomic view; each record is itself
// consistent, and every write that acts on a snapshot is a script that
// checks what it expects. An unknown run is ErrNotFound.
func (s *Store) Snapshot(ctx context.Context, runID string, stepHint int) (Snapshot, error) {
	var run, held *redis.MapStringStringCmd
	var ids *redis.StringSliceCmd
	var sched *redis.FloatCmd
	var outcomes *redis.XMessageSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		run = p.HGetAll(ctx, s.runKey(runID))
		held = p.HGetAll(ctx, s.heldKey(runID))
		outcomes = p.XRangeN(ctx, s.outcomesKey(runID), "-", "+", outcomesBatch)
		sched = p.ZScore(ctx, s.activeKey(), runID)
		if stepHint >= 0 {
			ids = p.LRange(ctx, s.stepKey(runID, stepHint), 0, -1)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) { // Nil: not scheduled
		return Snapshot{}, fmt.Errorf("snapshot of run %s: %w", runID, err)
	}
	var snap Snapshot
	if sched.Err() == nil {
		snap.Scheduled = fromMillis(int64(sched.Val()))
	}
	if snap.Run, err = decodeRun(runID, run.Val()); err != nil {
		return Snapshot{}, err
	}
	if snap.Held, err = decodeHeld(runID, held.Val()); err != nil {
		return Snapshot{}, err
	}
	snap.Outcomes = decodeOutcomes(runID, outcomes.Val())
	callIDs := []string(nil)
	if ids != nil && snap.Run.Step == stepHint {
		callIDs = ids.Val()
	} else if callIDs, err = s.rdb.LRange(ctx, s.stepKey(runID, snap.Run.Step), 0, -1).Result(); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot of run %s: %w", runID, err)
	}
	if snap.Calls, err = s.getCalls(ctx, runID, callIDs); err != nil {
		return Snapshot{}, err
	}
	return snap, nil
}
