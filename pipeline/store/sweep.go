package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// DefaultDueLimit is how many runs DueRuns hands out when limit <= 0.
const DefaultDueLimit = 100

// ScheduleSweep asks the sweeper to look at the run at `at`, replacing any
// earlier schedule of it. Whoever moves a run out of waiting calls it after
// the move, so a reconcile that read the run waiting finds the schedule
// changed and leaves it (RescheduleWaiting).
func (s *Store) ScheduleSweep(ctx context.Context, runID string, at time.Time) error {
	if err := s.rdb.ZAdd(ctx, s.activeKey(), redis.Z{Score: float64(toMillis(at)), Member: runID}).Err(); err != nil {
		return fmt.Errorf("schedule sweep of run %s: %w", runID, err)
	}
	return nil
}

// DueRuns returns up to limit runs (default 100) whose sweep time is at or
// before now, earliest first, and in the same script reschedules each to
// recheck: two sweepers calling it at once never get the same run before
// recheck. A run stays in the index until its result is published
// (MarkPublished), the sweeper reschedules it, or it is forgotten (Forget).
func (s *Store) DueRuns(ctx context.Context, now time.Time, limit int64, recheck time.Time) ([]string, error) {
	return s.due(ctx, s.activeKey(), "due runs", now, limit, recheck)
}

// due runs due_runs on the index key: the members due by now, each pushed
// to recheck.
func (s *Store) due(ctx context.Context, key, what string, now time.Time, limit int64, recheck time.Time) ([]string, error) {
	if limit <= 0 {
		limit = DefaultDueLimit
	}
	v, err := s.call(ctx, s.scripts.dueRuns, what, []string{key}, struct {
		Now     int64 `json:"now"`
		Limit   int64 `json:"limit"`
		Recheck int64 `json:"recheck"`
	}{toMillis(now), limit, toMillis(recheck)})
	if err != nil {
		return nil, err
	}
	list, err := replyList(v, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	ids := make([]string, 0, len(list))
	for _, x := range list {
		id, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s: unexpected member %T", what, x)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// RescheduleWaiting moves a waiting run's sweep time to next (the zero time
// takes the run off the schedule), but only if it is still read, the sweep
// time the caller read with the run (zero: not scheduled); it reports
// whether it changed anything. A reconcile that finds a run waiting uses
// it, so it never unschedules a run that a decision has meanwhile moved
// on. In the same round trip it puts the run's parked calls, among calls,
// in the pending indexes (an indexed call stays as it is): so are calls
// whose parking's process died before it indexed them listed again. When
// that write fails and the reschedule did not (Redis out of memory refuses
// a ZADD and not a ZREM; a cluster's nodes answer apart), the run goes back
// on the schedule at read (when it was not on it, at its last update: due
// at once), so that a sweep comes back to index them, and the error is
// returned.
func (s *Store) RescheduleWaiting(ctx context.Context, run pipeline.Run, calls []pipeline.ToolCall, read, next time.Time) (bool, error) {
	score := func(t time.Time) *int64 { // nil: not scheduled
		if t.IsZero() {
			return nil
		}
		ms := toMillis(t)
		return &ms
	}
	what := "reschedule run " + run.ID
	c, err := callOf(s.scripts.rescheduleIf, []string{s.activeKey()}, struct {
		Run  string `json:"run"`
		Read *int64 `json:"read,omitempty"`
		Next *int64 `json:"next,omitempty"`
	}{run.ID, score(read), score(next)})
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	zs := pendingEntries(run.ID, calls)
	var indexed []redis.Cmder
	v, err := s.evalAmong(ctx, c,
		func(p redis.Pipeliner, eval func()) {
			if len(zs) > 0 {
				indexed = s.queuePending(ctx, p, run.Tenant, zs)
			}
			eval()
		})
	if err != nil {
		return false, scriptError(err, what)
	}
	for _, c := range indexed {
		if err := c.Err(); err != nil {
			back := read
			if back.IsZero() {
				back = run.UpdatedAt
			}
			return false, errors.Join(fmt.Errorf("%s: index its pending calls: %w", what, err),
				s.ScheduleSweep(context.WithoutCancel(ctx), run.ID, back))
		}
	}
	return v == int64(1), nil
}
