package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Batches: POST /v1/runs/batch names the runs it creates as a batch, so a
// person can follow the batch's progress. The batch is the list of its run
// ids its tenant owns, written after its runs (the gateway leaves out the
// ids of runs it could not create for that tenant); its counts are read
// from the runs themselves, so they are never out of step with them. A
// batch fed from Kafka (a batch_id on run requests) grows one run at a
// time as its requests are admitted (GrowBatch): its record then names no
// runs, which are in a sorted set beside it.
//
//	<p>:batch:{<batch>}        STRING  JSON {"tenant", "run_ids"}, kept twice runs.retention
//	<p>:batch:{<batch>}:runs   ZSET    the run ids of a batch fed from Kafka, by admission
//	                                   time, kept as long

func (s *Store) batchKey(id string) string     { return s.prefix + ":batch:{" + id + "}" }
func (s *Store) batchRunsKey(id string) string { return s.batchKey(id) + ":runs" }

// Batch is a batch of runs.
type Batch struct {
	Tenant string   `json:"tenant"`
	RunIDs []string `json:"run_ids"`
}

// SaveBatch records batch id: the same batch sent again replaces the
// record with what that send found, so a run whose create failed the
// first time joins the batch once a resend creates it. It outlives its runs
// (twice runs.retention), like a thread's hint.
func (s *Store) SaveBatch(ctx context.Context, id string, b Batch) error {
	v, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("encode batch %s: %w", id, err)
	}
	if err := s.rdb.Set(ctx, s.batchKey(id), v, 2*s.retention).Err(); err != nil {
		return fmt.Errorf("save batch %s: %w", id, err)
	}
	return nil
}

// GrowBatch adds runID to batch id of tenant, fed from Kafka, at now: the
// batch is recorded at its first run; the same run again changes nothing.
// A batch of another tenant is an error wrapping ErrConflict.
func (s *Store) GrowBatch(ctx context.Context, id, tenant, runID string, now time.Time) error {
	record, err := json.Marshal(Batch{Tenant: tenant, RunIDs: []string{}})
	if err != nil {
		return fmt.Errorf("encode batch %s: %w", id, err)
	}
	_, err = s.call(ctx, s.scripts.growBatch, "add run "+runID+" to batch "+id, []string{s.batchKey(id), s.batchRunsKey(id)}, struct {
		Record string `json:"record"`
		Tenant string `json:"tenant"`
		RunID  string `json:"run_id"`
		Score  int64  `json:"score"`
		TTLMs  int64  `json:"ttl_ms"`
	}{string(record), tenant, runID, toMillis(now), (2 * s.retention).Milliseconds()})
	return err
}

// GetBatch reads batch id, the runs it grew by from Kafka after those it
// was recorded with; ErrNotFound when there is none (or no more).
func (s *Store) GetBatch(ctx context.Context, id string) (Batch, error) {
	var get *redis.StringCmd
	var grown *redis.StringSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, s.batchKey(id))
		grown = p.ZRange(ctx, s.batchRunsKey(id), 0, -1)
		return nil
	})
	v, gerr := get.Bytes()
	if errors.Is(gerr, redis.Nil) {
		return Batch{}, fmt.Errorf("%w: batch %s", ErrNotFound, id)
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return Batch{}, fmt.Errorf("batch %s: %w", id, err)
	}
	var b Batch
	if err := json.Unmarshal(v, &b); err != nil {
		return Batch{}, fmt.Errorf("decode batch %s: %w", id, err)
	}
	b.RunIDs = append(b.RunIDs, grown.Val()...)
	return b, nil
}

// RunStatus is a run's status, once it has one its termination reason,
// the tokens it has used and its tenant (pipeline.DefaultTenant for a run
// stored without one; "" with the status, for a run that does not exist).
type RunStatus struct {
	Tenant string
	Status pipeline.RunStatus
	Reason pipeline.TerminationReason
	Usage  pipeline.Usage
}

// RunStatuses reads the status of each run, in order, a page of pipelined
// reads at a time; a run that does not exist (or expired) has status "".
func (s *Store) RunStatuses(ctx context.Context, runIDs []string) ([]RunStatus, error) {
	const page = 1000
	out := make([]RunStatus, 0, len(runIDs))
	for start := 0; start < len(runIDs); start += page {
		ids := runIDs[start:min(start+page, len(runIDs))]
		cmds := make([]*redis.SliceCmd, len(ids))
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				cmds[i] = p.HMGet(ctx, s.runKey(id), "status", "term_reason", "in_tok", "out_tok", "cost", "tenant")
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("statuses of %d runs: %w", len(ids), err)
		}
		for _, c := range cmds {
			v := c.Val()
			st, _ := v[0].(string)
			reason, _ := v[1].(string)
			in, _ := v[2].(string)
			outTok, _ := v[3].(string)
			cost, _ := v[4].(string)
			tenant, _ := v[5].(string)
			if st != "" {
				tenant = cmp.Or(tenant, pipeline.DefaultTenant)
			}
			u := pipeline.Usage{}
			u.InputTokens, _ = strconv.ParseInt(in, 10, 64)
			u.OutputTokens, _ = strconv.ParseInt(outTok, 10, 64)
			micro, _ := strconv.ParseInt(cost, 10, 64)
			u.CostUSD = pipeline.USD(micro)
			out = append(out, RunStatus{Tenant: tenant, Status: pipeline.RunStatus(st), Reason: pipeline.TerminationReason(reason), Usage: u})
		}
	}
	return out, nil
}
