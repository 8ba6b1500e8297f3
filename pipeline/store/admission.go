package store

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Admission of runs requested on Kafka (ADR 0056). The live index holds
// every run not yet retired; beside it, in its slot, each tenant's and each
// batch's live runs, written by every create (HTTP and Kafka alike) and
// taken out by the retirement, as the live index is:
//
//	{<p>:live}:t:<tenant>   ZSET   a tenant's runs not yet retired, scored as <p>:live
//	{<p>:live}:b:<batch>    ZSET   a batch's runs not yet retired, scored as <p>:live
//
// AdmitRun checks the three sizes and lists the run in one script, so two
// gateways never admit one run too many between them; the run is counted
// from its admission, before its record exists, and a crash between the
// two leaves it listed, admitted again when Kafka redelivers its request.

// liveTenantKey is the live index of one tenant's runs; liveBatchKey of one
// batch's. The tag {<p>:live} puts them in the live index's slot: Redis
// hashes the key "<p>:live" by its whole name, which is the tag.
func (s *Store) liveTenantKey(tenant string) string {
	return "{" + s.liveKey() + "}:t:" + cmp.Or(tenant, pipeline.DefaultTenant)
}

func (s *Store) liveBatchKey(batch string) string { return "{" + s.liveKey() + "}:b:" + batch }

// Admission is what AdmitRun checks a run against: the run (its id, tenant
// and batch), when it is created, and the maxima of active runs for the
// deployment, its tenant and its batch.
type Admission struct {
	Run       pipeline.Run
	At        time.Time
	MaxActive int
	TenantMax int
	BatchMax  int
}

// AdmitRun lists a run about to be created in the live indexes when the
// deployment, its tenant and its batch each have fewer active runs than
// their maxima, and reports whether it did; a run already listed (its
// request redelivered) is admitted. It does not wait: a caller that is
// refused tries again once runs have ended.
func (s *Store) AdmitRun(ctx context.Context, a Admission) (bool, error) {
	if err := s.listLiveOnce(ctx); err != nil {
		return false, fmt.Errorf("admit run %s: %w", a.Run.ID, err)
	}
	keys := []string{s.liveKey(), s.liveTenantKey(a.Run.Tenant)}
	if a.Run.Batch != "" {
		keys = append(keys, s.liveBatchKey(a.Run.Batch))
	}
	v, err := s.call(ctx, s.scripts.admitRun, "admit run "+a.Run.ID, keys, struct {
		RunID     string `json:"run_id"`
		Score     int64  `json:"score"`
		MaxActive int    `json:"max_active"`
		TenantMax int    `json:"tenant_max"`
		BatchMax  int    `json:"batch_max"`
	}{a.Run.ID, toMillis(a.At), a.MaxActive, a.TenantMax, a.BatchMax})
	if err != nil {
		return false, err
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// listShares queues in p the run's entries in its tenant's and batch's
// live indexes (NX: a replay keeps its place), with the create's other
// indexes; it returns the commands, for their errors.
func (s *Store) listShares(ctx context.Context, p redis.Pipeliner, run pipeline.Run, z redis.Z) []redis.Cmder {
	cmds := []redis.Cmder{p.ZAddNX(ctx, s.liveTenantKey(run.Tenant), z)}
	if run.Batch != "" {
		cmds = append(cmds, p.ZAddNX(ctx, s.liveBatchKey(run.Batch), z))
	}
	return cmds
}

// unlistShares queues in p the run's removal from its tenant's and batch's
// live indexes, with its retirement; it returns the commands.
func (s *Store) unlistShares(ctx context.Context, p redis.Pipeliner, run pipeline.Run) []redis.Cmder {
	cmds := []redis.Cmder{p.ZRem(ctx, s.liveTenantKey(run.Tenant), run.ID)}
	if run.Batch != "" {
		cmds = append(cmds, p.ZRem(ctx, s.liveBatchKey(run.Batch), run.ID))
	}
	return cmds
}

// Withdraw takes a run that was admitted but will not be created out of
// the live indexes, its tenant's and batch's included.
func (s *Store) Withdraw(ctx context.Context, run pipeline.Run) error {
	var cmds []redis.Cmder
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmds = append(s.unlistShares(ctx, p, run), p.ZRem(ctx, s.liveKey(), run.ID))
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return fmt.Errorf("withdraw the admission of run %s: %w", run.ID, err)
		}
	}
	return nil
}
