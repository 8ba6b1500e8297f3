package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Tenants' indexes. A run stored with a tenant other than the default one
// is listed in its tenant's run index beside the index of every run, and
// its parked calls in its tenant's pending index beside the index of all
// (ADR 0034): a tenant's lists then cost what its own runs and calls cost,
// however many other tenants have. The default tenant's (every run's, on a
// gateway without API keys) are listed from the indexes of all, which they
// would otherwise double.
//
// A Redis written before there were tenants' indexes has its runs and calls
// in the indexes of all only: the first tenant's list of each kind adds
// them, once for the Redis, and marks it done.

// tenantIndexed reports whether a tenant's runs and parked calls have
// indexes of their own.
func tenantIndexed(tenant string) bool {
	return tenant != "" && tenant != pipeline.DefaultTenant
}

// runsTenantChunk is how many entries of the run index listTenantsOnce
// reads per round trip.
const runsTenantChunk = 1000

// listTenantsOnce adds the runs created before there were tenants' run
// indexes to them: it walks the index of every run from the newest (so
// that runs created meanwhile, which are newer, and runs trimmed
// meanwhile, which are older, shift nothing it has yet to read). Any number
// of stores may do it at once.
func (s *Store) listTenantsOnce(ctx context.Context) error {
	if s.tenantRunsListed.Load() {
		return nil
	}
	n, err := s.rdb.Exists(ctx, s.tenantRunsIndexedKey()).Result()
	if err != nil {
		return fmt.Errorf("index runs by tenant: %w", err)
	}
	for offset := int64(0); n == 0; offset += runsTenantChunk {
		entries, err := s.rdb.ZRevRangeWithScores(ctx, s.runsKey(), offset, offset+runsTenantChunk-1).Result()
		if err != nil {
			return fmt.Errorf("index runs by tenant: %w", err)
		}
		err = s.toTenants(ctx, entries, func(e redis.Z) string { return fmt.Sprint(e.Member) },
			func(p redis.Pipeliner, tenant string, e redis.Z) {
				p.ZAddNX(ctx, s.tenantRunsKey(tenant), e)
				p.SAdd(ctx, s.tenantsKey(), tenant)
			})
		if err != nil {
			return fmt.Errorf("index runs by tenant: %w", err)
		}
		if len(entries) < runsTenantChunk {
			if err := s.rdb.Set(ctx, s.tenantRunsIndexedKey(), "1", 0).Err(); err != nil {
				return fmt.Errorf("index runs by tenant: %w", err)
			}
			break
		}
	}
	s.tenantRunsListed.Store(true)
	return nil
}

// indexTenantsOnce adds the calls parked before there were tenants'
// pending indexes to them: it reads the index of all whole (so that calls
// decided meanwhile shift nothing). Any number of stores may do it at once;
// an entry it adds for a call decided meanwhile is dropped as stale by the
// tenant's next list.
func (s *Store) indexTenantsOnce(ctx context.Context) error {
	if s.tenantsIndexed.Load() {
		return nil
	}
	n, err := s.rdb.Exists(ctx, s.tenantsIndexedKey()).Result()
	if err != nil {
		return fmt.Errorf("index pending calls by tenant: %w", err)
	}
	if n == 0 {
		all, err := s.rdb.ZRangeWithScores(ctx, s.pendingKey(), 0, -1).Result()
		if err != nil {
			return fmt.Errorf("index pending calls by tenant: %w", err)
		}
		for len(all) > 0 {
			chunk := all[:min(len(all), pendingChunk)]
			all = all[len(chunk):]
			err := s.toTenants(ctx, chunk, func(e redis.Z) string {
				runID, _, _ := parsePendingMember(fmt.Sprint(e.Member))
				return runID
			}, func(p redis.Pipeliner, tenant string, e redis.Z) {
				p.ZAdd(ctx, s.tenantPendingKey(tenant), e)
			})
			if err != nil {
				return fmt.Errorf("index pending calls by tenant: %w", err)
			}
		}
		if err := s.rdb.Set(ctx, s.tenantsIndexedKey(), "1", 0).Err(); err != nil {
			return fmt.Errorf("index pending calls by tenant: %w", err)
		}
	}
	s.tenantsIndexed.Store(true)
	return nil
}

// toTenants adds entries of an index of all to their tenants' indexes with
// add, for the entries whose run (runOf) has an indexed tenant: one round
// trip reads the runs' tenants, one adds them.
func (s *Store) toTenants(ctx context.Context, entries []redis.Z, runOf func(redis.Z) string, add func(redis.Pipeliner, string, redis.Z)) error {
	tenants := make([]*redis.StringCmd, len(entries))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range entries {
			runID := runOf(e)
			if checkRunID(runID) != nil {
				runID = "-" // a malformed entry: its read finds nothing
			}
			tenants[i] = p.HGet(ctx, s.runKey(runID), "tenant")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range entries {
			if t := tenants[i].Val(); tenantIndexed(t) {
				add(p, t, e)
			}
		}
		return nil
	})
	return err
}
