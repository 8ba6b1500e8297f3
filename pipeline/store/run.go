package store

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/encoding/json"

	"github.com/stepwise-run/stepwise/pipeline"
)

// CreateRun writes a new run (status created, step state pending, created
// and updated at now, at its first step: 0, or a fork's step after the one
// it was forked from), appends its input messages (a fork's: the history it
// copied) and the run.created event (data: agent, and agent_version,
// forked_from or rerun_of when set), and indexes it for ListRuns. The
// caller's Status, Step, Termination, Usage, Attempts, lease and times are
// ignored; ID, Agent, AgentVersion, Model, Metadata, RequestHash, tenant, batch, trace, a child run's
// parent and depth, ForkedFrom, RerunOf, StartAt, ScheduleID, TickAt and Inference
// are kept.
//
// When the run already exists: with the same RequestHash it returns the
// stored run and false (an idempotent replay, nothing written); with another
// it returns an error wrapping ErrConflict. It returns the run and true when
// it created it.
func (s *Store) CreateRun(ctx context.Context, run pipeline.Run, input []pipeline.Message, now time.Time) (pipeline.Run, bool, error) {
	return s.create(ctx, run, input, time.Time{}, now)
}

// StartRun is CreateRun for a run the sweeper must start if nobody else
// does: it also schedules the run's first sweep at sweepAt. The list entry
// and the schedule are written before the run, so a writer that dies after
// the run's write leaves a run that is listed and that the sweeper will
// start; entries for a run that is never written are dropped by the
// sweeper (Forget). A replay reschedules the run's sweep at sweepAt.
func (s *Store) StartRun(ctx context.Context, run pipeline.Run, input []pipeline.Message, sweepAt, now time.Time) (pipeline.Run, bool, error) {
	return s.create(ctx, run, input, sweepAt, now)
}

// create writes the run after its indexes: the list entries (NX: a replay
// keeps its place; the search indexes among them: search.go) and, unless
// sweepAt is zero, the sweep schedule. On one
// Redis the indexes and the script go in one pipeline, which Redis runs in
// order; on a cluster they live on other nodes, so they go one round trip
// before the script.
func (s *Store) create(ctx context.Context, run pipeline.Run, input []pipeline.Message, sweepAt, now time.Time) (pipeline.Run, bool, error) {
	if err := checkRunID(run.ID); err != nil {
		return pipeline.Run{}, false, err
	}
	if err := checkJSON("model", run.Model); err != nil {
		return pipeline.Run{}, false, err
	}
	if err := checkJSON("metadata", run.Metadata); err != nil {
		return pipeline.Run{}, false, err
	}
	fresh := pipeline.Run{
		ID: run.ID, Agent: run.Agent, AgentVersion: run.AgentVersion, Tenant: run.Tenant, Model: run.Model, Metadata: run.Metadata, RequestHash: run.RequestHash, Trace: run.Trace, Batch: run.Batch, BatchBudget: run.BatchBudget,
		ParentRunID: run.ParentRunID, ParentCallID: run.ParentCallID, Depth: run.Depth,
		ForkedFrom: run.ForkedFrom, RerunOf: run.RerunOf,
		StartAt: run.StartAt, ScheduleID: run.ScheduleID, TickAt: run.TickAt, Inference: run.Inference,
		Status: pipeline.RunCreated, Step: run.FirstStep(), StepState: pipeline.StepPending, CreatedAt: now, UpdatedAt: now,
	}
	ev, err := newEntry(fresh.Step, "", pipeline.EventRunCreated, now, struct {
		Agent        string              `json:"agent"`
		AgentVersion string              `json:"agent_version,omitempty"`
		ForkedFrom   *pipeline.ForkPoint `json:"forked_from,omitempty"`
		RerunOf      string              `json:"rerun_of,omitempty"`
	}{run.Agent, run.AgentVersion, run.ForkedFrom, run.RerunOf})
	if err != nil {
		return pipeline.Run{}, false, err
	}
	msgs := make([]string, len(input))
	for i, m := range input {
		b, err := json.Marshal(m)
		if err != nil {
			return pipeline.Run{}, false, fmt.Errorf("%w: input message %d: %v", ErrInvalid, i, err)
		}
		msgs[i] = string(b)
	}
	cmd, err := callOf(s.scripts.createRun, []string{s.runKey(run.ID), s.msgsKey(run.ID), s.eventsKey(run.ID)}, struct {
		ReqHash  string   `json:"req_hash"`
		Fields   []any    `json:"fields"`
		Messages []string `json:"messages"`
		Event    entry    `json:"event"`
	}{run.RequestHash, runFields(fresh), msgs, ev})
	if err != nil {
		return pipeline.Run{}, false, err
	}
	what := "create run " + run.ID
	var indexed []redis.Cmder
	index := func(p redis.Pipeliner) {
		z := redis.Z{Score: float64(toMillis(now)), Member: run.ID}
		indexed = []redis.Cmder{p.ZAddNX(ctx, s.runsKey(), z), p.ZAddNX(ctx, s.liveKey(), z)}
		indexed = append(indexed, s.listShares(ctx, p, run, z)...)
		indexed = append(indexed, s.indexSearch(ctx, p, run, z)...)
		if tenantIndexed(run.Tenant) {
			indexed = append(indexed, p.ZAddNX(ctx, s.tenantRunsKey(run.Tenant), z), p.SAdd(ctx, s.tenantsKey(), run.Tenant))
		}
		if !sweepAt.IsZero() {
			indexed = append(indexed, p.ZAdd(ctx, s.activeKey(), redis.Z{Score: float64(toMillis(sweepAt)), Member: run.ID}))
		}
	}
	indexErr := func() error {
		for _, c := range indexed {
			if err := c.Err(); err != nil {
				return fmt.Errorf("index run %s: %w", run.ID, err)
			}
		}
		return nil
	}
	var v any
	if s.cluster {
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { index(p); return nil })
		if err := indexErr(); err != nil {
			return pipeline.Run{}, false, err
		}
		v, err = s.run(ctx, cmd, what)
	} else {
		v, err = s.evalAmong(ctx, cmd, func(p redis.Pipeliner, eval func()) { index(p); eval() })
		if err != nil {
			err = scriptError(err, what)
		}
		err = cmp.Or(indexErr(), err)
	}
	if err != nil {
		return pipeline.Run{}, false, err
	}
	reply, err := replyList(v, 2)
	if err != nil {
		return pipeline.Run{}, false, fmt.Errorf("%s: %w", what, err)
	}
	stored, err := s.decodeRunReply(run.ID, reply[1])
	if err != nil {
		return pipeline.Run{}, false, err
	}
	return stored, reply[0] == int64(1), nil
}

// GetRun returns the run's record, or an error wrapping ErrNotFound.
func (s *Store) GetRun(ctx context.Context, runID string) (pipeline.Run, error) {
	h, err := s.rdb.HGetAll(ctx, s.runKey(runID)).Result()
	if err != nil {
		return pipeline.Run{}, fmt.Errorf("get run %s: %w", runID, err)
	}
	return decodeRun(runID, mapFields(h))
}

// Messages returns the run's conversation in order: input, then assistant
// and tool messages as steps committed them. An unknown run is ErrNotFound.
func (s *Store) Messages(ctx context.Context, runID string) ([]pipeline.Message, error) {
	var exists *redis.IntCmd
	var list *redis.StringSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		exists = p.Exists(ctx, s.runKey(runID))
		list = p.LRange(ctx, s.msgsKey(runID), 0, -1)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("messages of run %s: %w", runID, err)
	}
	if exists.Val() == 0 {
		return nil, fmt.Errorf("%w: run %s", ErrNotFound, runID)
	}
	return decodeMessages(runID, list.Val())
}

// decodeMessages decodes the run's messages list.
func decodeMessages(runID string, raw []string) ([]pipeline.Message, error) {
	out := make([]pipeline.Message, 0, len(raw))
	for i, r := range raw {
		var m pipeline.Message
		if err := json.Unmarshal([]byte(r), &m); err != nil {
			return nil, fmt.Errorf("decode message %d of run %s: %w", i, runID, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// FinishRun ends a run outside the StepEnd path (errors, cancel): status
// done, the termination, the run.finished event; the step state is left as
// it is, so a worker still holding the step finds the run done and its
// commit is refused. A run already done is ErrStale (with the current run
// returned). t.Reason must be a reason that ends a run (not suspended).
// Each call of its step still parked keeps its status, and its approval
// request closes with an applied outcome in the run's outbox, decision id
// "cancel:<call id>", reason "run ended: <reason>: <detail>". The run stays on the sweeper's list until its result is published
// (MarkPublished).
func (s *Store) FinishRun(ctx context.Context, runID string, t pipeline.Termination, now time.Time) (pipeline.Run, error) {
	if err := checkTermination(t); err != nil {
		return pipeline.Run{}, err
	}
	ev, err := newEntry(-1, "", pipeline.EventRunFinished, now, t)
	if err != nil {
		return pipeline.Run{}, err
	}
	what := fmt.Sprintf("finish run %s", runID)
	v, err := s.call(ctx, s.scripts.finishRun, what, []string{s.runKey(runID), s.eventsKey(runID)}, struct {
		Now    int64                `json:"now"`
		Reason string               `json:"reason"`
		Code   string               `json:"code"`
		Detail string               `json:"detail"`
		From   []pipeline.RunStatus `json:"from"`
		To     pipeline.RunStatus   `json:"to"`
		Event  entry                `json:"event"`
		Close  closeArg             `json:"close"`
	}{toMillis(now), string(t.Reason), t.Code, t.Detail, finishable, pipeline.RunDone, ev,
		closeOf(withReason("run ended: "+string(t.Reason), t.Detail))})
	if err != nil {
		return s.currentRun(ctx, runID, err)
	}
	return s.decodeRunReply(runID, v)
}

// finishable are the run statuses FinishRun ends: those the table moves to
// done.
var finishable = statesTo(runStatuses, pipeline.RunDone)

// MarkPublished records that a done run's result is on run-results and
// retires the run: off the sweeper's list and, with a retention, onto the
// retired index with its tenant (retention.go), at now. Of run, its id,
// tenant and batch are used. Until then the sweeper keeps the
// run and publishes the result again if its publisher died (the result's
// outbox); a run found published on the list is marked again, which
// retires it. A run that is gone is not recreated. The mark goes first: on
// one Redis in the same pipeline as the retirement (Redis runs it in
// order), on a cluster one round trip ahead of it. Every run that ends
// comes here, so its conversation leaves the cache here (conversations.go:
// the cache is for the runs this process may claim again).
func (s *Store) MarkPublished(ctx context.Context, run pipeline.Run, now time.Time) error {
	runID := run.ID
	s.conversations.forget(runID)
	what := "mark the result of run " + runID + " published"
	keys, arg := []string{s.runKey(runID)}, markArg([]outboxMark{{Part: "run", Field: "published", Value: "1"}})
	var retired []redis.Cmder
	retire := func(p redis.Pipeliner) { retired = s.retire(ctx, p, run, now) }
	var err error
	if s.cluster {
		if _, err = s.call(ctx, s.scripts.markSent, what, keys, arg); err != nil {
			return err
		}
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { retire(p); return nil })
	} else {
		c, err := callOf(s.scripts.markSent, keys, arg)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if _, err = s.evalAmong(ctx, c, func(p redis.Pipeliner, eval func()) { eval(); retire(p) }); err != nil {
			return scriptError(err, what)
		}
	}
	for _, c := range retired {
		if err := c.Err(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// checkTermination refuses a termination that would not end the run.
func checkTermination(t pipeline.Termination) error {
	if t.Reason == "" || t.Reason.RunStatus() != pipeline.RunDone {
		return fmt.Errorf("%w: termination reason %q does not end a run", ErrInvalid, t.Reason)
	}
	return nil
}

// currentRun returns the run as it is now together with err, for refusals
// whose callers inspect the run (ErrStale, ErrLeaseHeld). It is read after
// the refusal, so it may already be newer than what the script saw.
func (s *Store) currentRun(ctx context.Context, runID string, err error) (pipeline.Run, error) {
	if !isRefusal(err) {
		return pipeline.Run{}, err
	}
	run, gerr := s.GetRun(ctx, runID)
	if gerr != nil {
		return pipeline.Run{}, err
	}
	return run, err
}

func (s *Store) decodeRunReply(runID string, v any) (pipeline.Run, error) {
	h, err := pairs(v)
	if err != nil {
		return pipeline.Run{}, fmt.Errorf("run %s: %w", runID, err)
	}
	return decodeRun(runID, h)
}

// RunOwner returns the tenant of a run (pipeline.DefaultTenant for a run
// stored without one) and its trace context: one read, for the gateway to
// check who may see a run before it serves it, and to join a decision it
// publishes to the run's trace. An unknown run is ErrNotFound.
func (s *Store) RunOwner(ctx context.Context, runID string) (tenant, trace string, err error) {
	v, err := s.rdb.HMGet(ctx, s.runKey(runID), "status", "tenant", "trace").Result()
	if err != nil {
		return "", "", fmt.Errorf("tenant of run %s: %w", runID, err)
	}
	if status, _ := v[0].(string); status == "" {
		return "", "", fmt.Errorf("%w: run %s", ErrNotFound, runID)
	}
	tenant, _ = v[1].(string)
	trace, _ = v[2].(string)
	return cmp.Or(tenant, pipeline.DefaultTenant), trace, nil
}
