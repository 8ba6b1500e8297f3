package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/encoding/json"

	"github.com/stepwise-run/stepwise/pipeline/schedule"
)

// neverScore is the index score of a schedule nobody looks at (paused):
// later than any tick.
const neverScore = float64(1 << 52)

// CreateSchedule writes sc, a new schedule (its Rev is ignored), created
// and updated at now, and lists it to be looked at at its Next. The index
// entry goes first, so a writer that dies between the two leaves an entry
// the sweepers drop (DueSchedules' caller finds no record: ErrNotFound).
// When a schedule with its id exists, one of the same tenant, spec and run
// is returned with false (an idempotent replay); another is ErrConflict.
func (s *Store) CreateSchedule(ctx context.Context, sc schedule.Schedule, now time.Time) (schedule.Schedule, bool, error) {
	if err := checkRunID(sc.ID); err != nil {
		return schedule.Schedule{}, false, err
	}
	sc.CreatedAt, sc.UpdatedAt, sc.Rev = now, now, 0
	if err := s.rdb.ZAddNX(ctx, s.schedulesKey(), redis.Z{Score: lookScore(sc.Next), Member: sc.ID}).Err(); err != nil {
		return schedule.Schedule{}, false, fmt.Errorf("list schedule %s: %w", sc.ID, err)
	}
	got, written, err := s.putSchedule(ctx, sc)
	if err != nil || written {
		return got, written, err
	}
	if got.Tenant != sc.Tenant || !reflect.DeepEqual(got.Spec, sc.Spec) || !reflect.DeepEqual(got.Run, sc.Run) {
		return schedule.Schedule{}, false, fmt.Errorf("%w: schedule %s exists with another spec or run", ErrConflict, sc.ID)
	}
	return got, false, nil
}

// PutSchedule writes sc if the record is still at revision sc.Rev, and
// lists it to be looked at at lookAt (the zero time: never;
// schedule.Schedule.LookAt says when). It returns the
// record as stored and whether it wrote it: false when another write came
// between (the caller reads again). A schedule deleted meanwhile is
// ErrNotFound. The index is written after the record: if that write is
// lost, the look DueSchedules scheduled comes and writes it again.
func (s *Store) PutSchedule(ctx context.Context, sc schedule.Schedule, lookAt time.Time) (schedule.Schedule, bool, error) {
	if sc.Rev == 0 {
		return schedule.Schedule{}, false, fmt.Errorf("%w: schedule %s: a write needs the revision it read", ErrInvalid, sc.ID)
	}
	got, written, err := s.putSchedule(ctx, sc)
	if err != nil || !written {
		return got, written, err
	}
	if err := s.rdb.ZAdd(ctx, s.schedulesKey(), redis.Z{Score: lookScore(lookAt), Member: sc.ID}).Err(); err != nil {
		return got, true, fmt.Errorf("list schedule %s: %w", sc.ID, err)
	}
	return got, true, nil
}

// putSchedule runs put_schedule: sc's record written if it is at sc.Rev.
func (s *Store) putSchedule(ctx context.Context, sc schedule.Schedule) (schedule.Schedule, bool, error) {
	f, err := scheduleFields(sc)
	if err != nil {
		return schedule.Schedule{}, false, err
	}
	what := "write schedule " + sc.ID
	v, err := s.call(ctx, s.scripts.putSchedule, what, []string{s.scheduleKey(sc.ID)}, struct {
		Rev    int64 `json:"rev"`
		Fields []any `json:"fields"`
	}{sc.Rev, f})
	if err != nil {
		return schedule.Schedule{}, false, err
	}
	reply, err := replyList(v, 2)
	if err != nil {
		return schedule.Schedule{}, false, fmt.Errorf("%s: %w", what, err)
	}
	h, err := pairs(reply[1])
	if err != nil {
		return schedule.Schedule{}, false, fmt.Errorf("%s: %w", what, err)
	}
	got, err := decodeSchedule(sc.ID, h)
	return got, reply[0] == int64(1), err
}

// lookScore is the index score of a schedule looked at at `at` (the zero
// time: never).
func lookScore(at time.Time) float64 {
	if at.IsZero() {
		return neverScore
	}
	return float64(toMillis(at))
}

// GetSchedule returns the schedule's record, or an error wrapping
// ErrNotFound.
func (s *Store) GetSchedule(ctx context.Context, id string) (schedule.Schedule, error) {
	h, err := s.rdb.HGetAll(ctx, s.scheduleKey(id)).Result()
	if err != nil {
		return schedule.Schedule{}, fmt.Errorf("get schedule %s: %w", id, err)
	}
	return decodeSchedule(id, mapFields(h))
}

// ListSchedules returns every schedule, by id.
func (s *Store) ListSchedules(ctx context.Context) ([]schedule.Schedule, error) {
	ids, err := s.rdb.ZRange(ctx, s.schedulesKey(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.scheduleKey(id))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	out := make([]schedule.Schedule, 0, len(ids))
	for i, c := range cmds {
		sc, err := decodeSchedule(ids[i], mapFields(c.Val()))
		if errors.Is(err, ErrNotFound) {
			continue // listed, never written: the sweepers drop it
		}
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	slices.SortFunc(out, func(a, b schedule.Schedule) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// DeleteSchedule deletes the schedule's record and its index entry; the
// runs it started stay. Deleting a schedule that is gone does nothing.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.scheduleKey(id))
		p.ZRem(ctx, s.schedulesKey(), id)
		return nil
	}); err != nil {
		return fmt.Errorf("delete schedule %s: %w", id, err)
	}
	return nil
}

// DueSchedules returns up to limit schedules (default DefaultDueLimit) to
// look at by now, earliest first, and in the same script lists each to be
// looked at again at recheck, as DueRuns does for runs: two sweepers
// calling it at once never get the same schedule before recheck, and a
// look that dies is done again then.
func (s *Store) DueSchedules(ctx context.Context, now time.Time, limit int64, recheck time.Time) ([]string, error) {
	return s.due(ctx, s.schedulesKey(), "due schedules", now, limit, recheck)
}

// scheduleFields is sc's record as HSET arguments, every field.
func scheduleFields(sc schedule.Schedule) ([]any, error) {
	spec, err := json.Marshal(sc.Spec)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: spec: %w", sc.ID, err)
	}
	run, err := json.Marshal(sc.Run)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: run: %w", sc.ID, err)
	}
	firing, err := json.Marshal(sc.Firing)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: firing: %w", sc.ID, err)
	}
	return []any{
		"tenant", sc.Tenant,
		"spec", string(spec),
		"run", string(run),
		"paused", boolField(sc.Paused),
		"next", toMillis(sc.Next),
		"buffered", toMillis(sc.Buffered),
		"last_run", sc.LastRun,
		"firing", string(firing),
		"created_at", toMillis(sc.CreatedAt),
		"updated_at", toMillis(sc.UpdatedAt),
	}, nil
}

// decodeSchedule reads a schedule hash. An empty hash is ErrNotFound.
func decodeSchedule(id string, h fields) (schedule.Schedule, error) {
	if h.size() == 0 {
		return schedule.Schedule{}, fmt.Errorf("%w: schedule %s", ErrNotFound, id)
	}
	d := fieldDecoder{h: h}
	sc := schedule.Schedule{
		ID: id, Tenant: h.get("tenant"), Paused: h.get("paused") == "1",
		Next: d.time("next"), Buffered: d.time("buffered"), LastRun: h.get("last_run"),
		CreatedAt: d.time("created_at"), UpdatedAt: d.time("updated_at"), Rev: d.int("rev"),
	}
	err := errors.Join(d.err,
		json.Unmarshal([]byte(h.get("spec")), &sc.Spec),
		json.Unmarshal([]byte(h.get("run")), &sc.Run),
		json.Unmarshal([]byte(h.get("firing")), &sc.Firing))
	if err != nil {
		return schedule.Schedule{}, fmt.Errorf("decode schedule %s: %w", id, err)
	}
	return sc, nil
}
