package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Indexes beside the indexes of all (ADR 0034), so that a filtered list
// costs what it lists. A run stored with a tenant other than the default
// one is listed in its tenant's run index beside the index of every run,
// and its parked calls in its tenant's pending index beside the index of
// all: a tenant's lists then cost what its own runs and calls cost, however
// many other tenants have. The default tenant's (every run's, on a gateway
// without API keys) are listed from the indexes of all, which they would
// otherwise double. A run that has not ended and been retired is in the
// live index: a list of the running or waiting runs costs what they cost,
// however many ended runs are kept.
//
// A Redis written before these indexes has its runs and calls in the
// indexes of all only: the first list that reads each of them adds them,
// once for the Redis, and marks it done (deleting the mark redoes it).

// tenantIndexed reports whether a tenant's runs and parked calls have
// indexes of their own.
func tenantIndexed(tenant string) bool {
	return tenant != "" && tenant != pipeline.DefaultTenant
}

// listTenantsOnce adds the runs created before there were tenants' run
// indexes to them.
func (s *Store) listTenantsOnce(ctx context.Context) error {
	return s.addRunsOnce(ctx, &s.tenantRunsListed, s.tenantRunsIndexedKey(), "tenant", "index runs by tenant",
		func(p redis.Pipeliner, tenant string, e redis.Z) {
			if tenantIndexed(tenant) {
				p.ZAddNX(ctx, s.tenantRunsKey(tenant), e)
				p.SAdd(ctx, s.tenantsKey(), tenant)
			}
		})
}

// listLiveOnce adds the runs created before there was a live index, and
// not ended, to it.
func (s *Store) listLiveOnce(ctx context.Context) error {
	return s.addRunsOnce(ctx, &s.liveListed, s.liveIndexedKey(), "status", "index live runs",
		func(p redis.Pipeliner, status string, e redis.Z) {
			if status != "" && status != string(pipeline.RunDone) {
				p.ZAddNX(ctx, s.liveKey(), e)
			}
		})
}

// runsChunk is how many entries of the run index addRunsOnce reads per
// round trip.
const runsChunk = 1000

// addRunsOnce adds the runs created before an index of runs existed to it,
// once: it walks the index of every run from the newest (so that runs
// created meanwhile, which are newer, and runs trimmed meanwhile, which
// are older, shift nothing it has yet to read), reads field of each run and
// hands it to add.
func (s *Store) addRunsOnce(ctx context.Context, done *atomic.Bool, mark, field, what string, add func(redis.Pipeliner, string, redis.Z)) error {
	return s.once(ctx, done, mark, what, func() error {
		for offset := int64(0); ; offset += runsChunk {
			entries, err := s.rdb.ZRevRangeWithScores(ctx, s.runsKey(), offset, offset+runsChunk-1).Result()
			if err != nil {
				return err
			}
			if err := s.addByField(ctx, entries, func(e redis.Z) string { return fmt.Sprint(e.Member) }, field, add); err != nil {
				return err
			}
			if len(entries) < runsChunk {
				return nil
			}
		}
	})
}

// indexTenantsOnce adds the calls parked before there were tenants'
// pending indexes to them, once: it reads the index of all whole (so that
// calls decided meanwhile shift nothing). An entry it adds for a call
// decided meanwhile is dropped as stale by the tenant's next list.
func (s *Store) indexTenantsOnce(ctx context.Context) error {
	return s.once(ctx, &s.tenantsIndexed, s.tenantsIndexedKey(), "index pending calls by tenant", func() error {
		all, err := s.rdb.ZRangeWithScores(ctx, s.pendingKey(), 0, -1).Result()
		if err != nil {
			return err
		}
		for len(all) > 0 {
			chunk := all[:min(len(all), pendingChunk)]
			all = all[len(chunk):]
			err := s.addByField(ctx, chunk, func(e redis.Z) string {
				runID, _, _ := parsePendingMember(fmt.Sprint(e.Member))
				return runID
			}, "tenant", func(p redis.Pipeliner, tenant string, e redis.Z) {
				if tenantIndexed(tenant) {
					p.ZAdd(ctx, s.tenantPendingKey(tenant), e)
				}
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// once runs walk, which fills an index from an index of all, once for the
// Redis: unless done (the flag, for this store) or marked (the key mark, for
// the Redis), it walks, then marks the Redis and sets done. The lists that
// come meanwhile (a console polls) wait for the walk rather than walk too;
// any number of stores may walk at once (what they add is the same).
func (s *Store) once(ctx context.Context, done *atomic.Bool, mark, what string, walk func() error) error {
	if done.Load() {
		return nil
	}
	s.filling.Lock()
	defer s.filling.Unlock()
	if done.Load() {
		return nil
	}
	n, err := s.rdb.Exists(ctx, mark).Result()
	if err == nil && n == 0 {
		if err = walk(); err == nil {
			err = s.rdb.Set(ctx, mark, "1", 0).Err()
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	done.Store(true)
	return nil
}

// addByField hands each of entries of an index of all, with field of its
// run (runOf; "" when the run has none or is gone), to add, which queues
// what it adds to other indexes: one round trip reads the fields, one
// writes what add queued.
func (s *Store) addByField(ctx context.Context, entries []redis.Z, runOf func(redis.Z) string, field string, add func(redis.Pipeliner, string, redis.Z)) error {
	values := make([]*redis.StringCmd, len(entries))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range entries {
			runID := runOf(e)
			if checkRunID(runID) != nil {
				runID = "-" // a malformed entry: its read finds nothing
			}
			values[i] = p.HGet(ctx, s.runKey(runID), field)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range entries {
			add(p, values[i].Val(), e)
		}
		return nil
	})
	return err
}
