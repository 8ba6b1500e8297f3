package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Page sizes of ListPending.
const (
	DefaultPendingLimit = 100  // when PendingFilter.Limit <= 0
	MaxPendingLimit     = 1000 // larger limits are cut to this
	pendingChunk        = 100  // index entries read per round trip, at least
)

// PendingFilter selects suspended calls for ListPending. Zero fields match
// everything.
type PendingFilter struct {
	Agent  string
	Tool   string
	RunID  string
	Tenant string
	Limit  int // default 100, at most 1000
}

// PendingCall is a suspended call awaiting a decision, with its run's agent
// and tenant.
type PendingCall struct {
	Call   pipeline.ToolCall
	Agent  string
	Tenant string
}

// ListPending returns suspended calls awaiting a decision, oldest parked
// first, filtered by f.Agent, f.Tool, f.RunID and f.Tenant, at most f.Limit of them
// (default 100, at most 1000). Calls of runs that are done are not pending
// (no decision can apply to them).
//
// Without a run filter it walks a pending index, loading each entry's call
// and its run (one round trip per chunk of entries), and removes entries
// whose call is no longer suspended or whose run is done or gone; a filter
// that matches rarely walks the whole index, which holds only the calls
// awaiting decisions. The index is the tenant's own for a tenant filter
// other than the default tenant (tenantIndexed), so that a tenant's list
// costs what its own calls cost, however many other tenants have; else it
// is the index of every tenant's calls. With a run filter it reads that
// run's current step instead of an index (an unknown run gives an empty
// list). A run id with a brace is ErrInvalid.
func (s *Store) ListPending(ctx context.Context, f PendingFilter) ([]PendingCall, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultPendingLimit
	}
	limit = min(limit, MaxPendingLimit)
	if f.RunID != "" {
		if err := checkRunID(f.RunID); err != nil {
			return nil, err
		}
		return s.runPending(ctx, f, limit)
	}
	index := s.pendingKey()
	if tenantIndexed(f.Tenant) {
		if err := s.indexTenantsOnce(ctx); err != nil {
			return nil, err
		}
		index = s.tenantPendingKey(f.Tenant)
	}
	out := []PendingCall{}
	var stale []any
	chunk := int64(max(limit, pendingChunk))
	for offset := int64(0); len(out) < limit; offset += chunk {
		members, err := s.rdb.ZRange(ctx, index, offset, offset+chunk-1).Result()
		if err != nil {
			return nil, fmt.Errorf("list pending calls: %w", err)
		}
		found, gone, err := s.loadPending(ctx, members)
		if err != nil {
			return nil, err
		}
		stale = append(stale, gone...)
		for _, p := range found {
			if pendingMatches(p, f) {
				out = append(out, p)
				if len(out) == limit {
					break
				}
			}
		}
		if int64(len(members)) < chunk {
			break
		}
	}
	// Removed after the walk, so the offsets of the walk did not shift.
	if len(stale) > 0 {
		if err := s.rdb.ZRem(ctx, index, stale...).Err(); err != nil {
			return nil, fmt.Errorf("drop stale pending entries: %w", err)
		}
	}
	return out, nil
}

// loadPending loads the calls of index members and their runs' agent and
// status in one round trip. It returns the pending ones in member order and
// the members that are stale (malformed, call not suspended, run done or
// gone).
func (s *Store) loadPending(ctx context.Context, members []string) ([]PendingCall, []any, error) {
	type entry struct {
		runID, callID string
		call          *redis.MapStringStringCmd
		run           *redis.SliceCmd
	}
	entries := make([]entry, 0, len(members))
	var stale []any
	for _, m := range members {
		runID, callID, ok := parsePendingMember(m)
		if !ok {
			stale = append(stale, m)
			continue
		}
		entries = append(entries, entry{runID: runID, callID: callID})
	}
	if len(entries) == 0 {
		return nil, stale, nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range entries {
			e := &entries[i]
			e.call = p.HGetAll(ctx, s.callKey(e.runID, e.callID))
			e.run = p.HMGet(ctx, s.runKey(e.runID), "agent", "status", "tenant")
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list pending calls: %w", err)
	}
	out := make([]PendingCall, 0, len(entries))
	for _, e := range entries {
		h := e.call.Val()
		rv := e.run.Val()
		agent, _ := rv[0].(string)
		status, _ := rv[1].(string)
		tenant, _ := rv[2].(string)
		if len(h) == 0 || h["status"] != string(pipeline.CallSuspended) || status == "" || status == string(pipeline.RunDone) {
			stale = append(stale, pendingMember(e.runID, e.callID))
			continue
		}
		call, err := decodeCall(e.runID, e.callID, mapFields(h))
		if err != nil {
			return nil, nil, err
		}
		out = append(out, PendingCall{Call: call, Agent: agent, Tenant: cmp.Or(tenant, pipeline.DefaultTenant)})
	}
	return out, stale, nil
}

// runPending lists the pending calls of one run from its current step.
func (s *Store) runPending(ctx context.Context, f PendingFilter, limit int) ([]PendingCall, error) {
	out := []PendingCall{}
	run, err := s.GetRun(ctx, f.RunID)
	if errors.Is(err, ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if run.Status == pipeline.RunDone {
		return out, nil
	}
	calls, err := s.StepCalls(ctx, run.ID, run.Step)
	if err != nil {
		return nil, err
	}
	for _, c := range calls {
		p := PendingCall{Call: c, Agent: run.Agent, Tenant: run.Tenant}
		if c.Status == pipeline.CallSuspended && c.Parking != nil && c.Parking.AwaitsDecision() && pendingMatches(p, f) {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return parkedAt(out[i]) < parkedAt(out[j]) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func parkedAt(p PendingCall) int64 {
	if p.Call.Parking == nil {
		return 0
	}
	return toMillis(p.Call.Parking.ParkedAt)
}

func pendingMatches(p PendingCall, f PendingFilter) bool {
	return (f.Agent == "" || p.Agent == f.Agent) && (f.Tool == "" || p.Call.Tool == f.Tool) &&
		(f.RunID == "" || p.Call.RunID == f.RunID) && (f.Tenant == "" || p.Tenant == f.Tenant)
}
