package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Retention. A run that ends (EndStep finishing it, FinishRun, CancelRun)
// gives every key it owns a time to live in the same script: the retention
// (WithRetention; 0, the default of New, keeps runs for good), or, on a
// store WithArchive, none until the run is archived (archive.go). Keys an
// ended run gains later (a decision id rejected after the end) inherit the
// run's time to live, and a mark on a key that is gone writes nothing, so
// nothing of an ended run outlives it.
//
// The global indexes are other keys (other cluster slots), so they cannot
// expire with the run: MarkPublished, the last write a run gets, moves it
// from the sweep schedule to the retired index, scored by when its keys
// expire; the sweeper's TrimRetired takes runs whose time has come out of
// the runs list, the tenants' run lists, the search indexes (search.go)
// and the retired index. The pending index drops a gone run's
// calls as ListPending walks it.

// WithRetention sets how long an ended run's keys live (default 0: for
// good). It applies to runs that end through this Store.
func WithRetention(d time.Duration) Option {
	return func(s *Store) { s.retention = max(d, 0) }
}

// Retention is how long an ended run's keys live; 0 is for good.
func (s *Store) Retention() time.Duration { return s.retention }

// retiredKey is the ZSET of ended runs scored by when their keys expire
// (unix ms), as stores before 2026-11-26 (ninth session) wrote it: members
// are run ids, whose tenant is gone with their record when they are
// trimmed, so the trim takes them out of every tenant's run index. It
// empties one retention after the last such store stopped retiring runs.
func (s *Store) retiredKey() string { return s.prefix + ":retired" }

// retiredOwnedKey is the ZSET of ended runs scored by when their keys
// expire (unix ms), each with its tenant (ownedMember), so that the trim
// takes a run out of its own tenant's run index alone: its cost then
// follows the runs it trims, not the number of tenants (ADR 0035).
func (s *Store) retiredOwnedKey() string { return s.prefix + ":retired:owned" }

// ownedMember is run's entry in the retired index with its tenant: its id,
// "{" (which no run id holds: checkRunID) and its tenant, when the tenant
// has a run index (tenantIndexed; nothing for the default tenant: a byte a
// kept run).
func ownedMember(run pipeline.Run) string {
	if !tenantIndexed(run.Tenant) {
		return run.ID + "{"
	}
	return run.ID + "{" + run.Tenant
}

// retire moves a run whose result is published from the sweep schedule and
// the live indexes (its tenant's and batch's too: admission.go) to the retired index (with a retention), in p: keys of
// other slots, so a pipeline rather than a transaction. The sweeper finds
// a run that a crash left on the schedule published, and retires it again;
// a run list drops an ended run it finds in the live index. It returns the
// commands, for their errors.
func (s *Store) retire(ctx context.Context, p redis.Pipeliner, run pipeline.Run, now time.Time) []redis.Cmder {
	var cmds []redis.Cmder
	if s.retention > 0 {
		cmds = append(cmds, p.ZAdd(ctx, s.retiredOwnedKey(), redis.Z{Score: float64(toMillis(now.Add(s.retention))), Member: ownedMember(run)}))
	}
	cmds = append(cmds, s.unlistShares(ctx, p, run)...)
	return append(cmds, p.ZRem(ctx, s.activeKey(), run.ID), p.ZRem(ctx, s.liveKey(), run.ID))
}

// TrimRetired takes up to limit retired runs whose keys have expired at now
// out of the runs list and the retired index, and reports how many it took.
// A run whose record is still there (its retention was longer, or it was
// made to live for good) is rescored to its own time to live, or dropped
// from the retired index when it has none. Any number of sweepers may trim
// at once. Runs retired with their tenant go first; then those an earlier
// store retired by id alone.
func (s *Store) TrimRetired(ctx context.Context, now time.Time, limit int64) (int, error) {
	took, read, err := s.trimFrom(ctx, s.retiredOwnedKey(), now, limit)
	if err != nil || read == limit {
		return took, err
	}
	more, _, err := s.trimFrom(ctx, s.retiredKey(), now, limit-read)
	return took + more, err
}

// trimFrom is TrimRetired over one retired index, key: owned members
// (retiredOwnedKey) or run ids (retiredKey). It returns how many runs it
// took out and how many entries it read.
func (s *Store) trimFrom(ctx context.Context, key string, now time.Time, limit int64) (took int, read int64, err error) {
	members, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: key, ByScore: true, Start: "-inf", Stop: toMillis(now), Count: limit,
	}).Result()
	if err != nil || len(members) == 0 {
		return 0, 0, wrapTrim(err)
	}
	owned := key == s.retiredOwnedKey()
	ids, tenantOf := members, make([]string, len(members))
	if owned {
		ids = make([]string, len(members))
		for i, m := range members {
			ids[i], tenantOf[i], _ = strings.Cut(m, "{")
		}
	}
	ttls := make([]*redis.DurationCmd, len(ids))
	var tenants *redis.StringSliceCmd
	var searched *redis.SliceCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			ttls[i] = p.PTTL(ctx, s.runKey(id))
		}
		searched = p.HMGet(ctx, s.searchedKey(), ids...)
		if !owned { // whose tenant is unknown: every tenant's index is told
			tenants = p.SMembers(ctx, s.tenantsKey())
		}
		return nil
	}); err != nil {
		return 0, 0, wrapTrim(err)
	}
	var gone, goneMembers, goneLists []any
	var goneIDs []string
	byTenant := map[string][]any{}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			switch ttl := ttls[i].Val(); {
			case ttl == -2: // no such key: expired
				gone, goneMembers = append(gone, id), append(goneMembers, members[i])
				goneIDs, goneLists = append(goneIDs, id), append(goneLists, searched.Val()[i])
				if t := tenantOf[i]; tenantIndexed(t) {
					byTenant[t] = append(byTenant[t], id)
				}
			case ttl < 0: // no time to live
				p.ZRem(ctx, key, members[i])
			default:
				p.ZAdd(ctx, key, redis.Z{Score: float64(toMillis(now.Add(ttl))), Member: members[i]})
			}
		}
		if len(gone) == 0 {
			return nil
		}
		if !owned {
			for _, t := range tenants.Val() {
				byTenant[t] = gone
			}
		}
		s.unlist(ctx, p, nil, gone...)
		s.unindexSearch(ctx, p, goneIDs, goneLists)
		for t, ids := range byTenant {
			p.ZRem(ctx, s.tenantRunsKey(t), ids...)
		}
		p.ZRem(ctx, s.activeKey(), gone...)
		p.ZRem(ctx, key, goneMembers...)
		return nil
	})
	return len(gone), int64(len(members)), wrapTrim(err)
}

// unlist queues in p the removal of runs that are gone from the run index,
// the live one and the run index of each of tenants: their tenant went with
// their record, so every tenant's index is told.
func (s *Store) unlist(ctx context.Context, p redis.Pipeliner, tenants []string, runIDs ...any) {
	p.ZRem(ctx, s.runsKey(), runIDs...)
	p.ZRem(ctx, s.liveKey(), runIDs...)
	for _, t := range tenants {
		p.ZRem(ctx, s.tenantRunsKey(t), runIDs...)
	}
}

func wrapTrim(err error) error {
	if err != nil {
		return fmt.Errorf("trim retired runs: %w", err)
	}
	return nil
}

// Forget takes a run that is gone (expired, or scheduled and never
// created) out of every index that names it by id: its tenant is unknown,
// so every tenant's run index, and its entry in the retired index under
// each tenant.
func (s *Store) Forget(ctx context.Context, runID string) error {
	var searched *redis.StringCmd
	var tenantsCmd *redis.StringSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		tenantsCmd = p.SMembers(ctx, s.tenantsKey())
		searched = p.HGet(ctx, s.searchedKey(), runID)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("forget run %s: %w", runID, err)
	}
	tenants := tenantsCmd.Val()
	owned := []any{ownedMember(pipeline.Run{ID: runID})}
	for _, t := range tenants {
		owned = append(owned, ownedMember(pipeline.Run{ID: runID, Tenant: t}))
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, s.activeKey(), runID)
		s.unlist(ctx, p, tenants, runID)
		s.unindexSearch(ctx, p, []string{runID}, []any{searched.Val()})
		p.ZRem(ctx, s.retiredKey(), runID)
		p.ZRem(ctx, s.retiredOwnedKey(), owned...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("forget run %s: %w", runID, err)
	}
	return nil
}

// libConsts are the constants scripts/lib.lua reads, which the scripts
// that start with it get first (loadScripts): retentionMS, the time to
// live of an ended run's keys (endTTL).
func libConsts(retentionMS int64) string {
	return fmt.Sprintf("local retention_ms = %d\n", retentionMS)
}
