package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Page sizes of ListRuns.
const (
	DefaultListLimit = 50  // when ListFilter.Limit <= 0
	MaxListLimit     = 500 // larger limits are cut to this
	listScanFactor   = 10  // index entries scanned per call: at most this × limit
)

// ListRuns returns runs newest first (by creation time, then run id),
// filtered by f (ListFilter.Matches), at most f.Limit of them (default 50,
// at most 500), and the cursor of the next page: "" when the index is
// exhausted. A page may hold fewer runs than the limit, even none, with a
// non-empty cursor: one call scans at most 10 × limit index entries, so a
// filter that matches rarely costs several calls instead of one long one.
//
// The cursor names the last entry scanned; the next page continues strictly
// after it, so runs created between pages neither repeat nor shift entries.
// A malformed cursor or status is ErrInvalid.
//
// A status filter other than done reads the index of the live runs (those
// not ended and retired), so that its pages hold running or waiting runs
// however many ended runs are kept; else a tenant filter other than the
// default tenant (tenantIndexed) reads the tenant's own run index, so that
// its pages hold the tenant's runs however many other tenants have. An
// ended run leaves the live index as a page finds it. Other filters read
// the index of every run.
func (s *Store) ListRuns(ctx context.Context, f ListFilter) ([]pipeline.Run, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	if f.Status != "" {
		if _, err := pipeline.ParseRunStatus(string(f.Status)); err != nil {
			return nil, "", fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	cur, err := decodeCursor(f.Cursor)
	if err != nil {
		return nil, "", err
	}
	index := s.runsKey()
	switch {
	case f.Status != "" && f.Status != pipeline.RunDone:
		if err := s.listLiveOnce(ctx); err != nil {
			return nil, "", err
		}
		index = s.liveKey()
	case tenantIndexed(f.Tenant):
		if err := s.listTenantsOnce(ctx); err != nil {
			return nil, "", err
		}
		index = s.tenantRunsKey(f.Tenant)
	}
	out := []pipeline.Run{}
	for scanned := 0; scanned < listScanFactor*limit; {
		chunk := min(limit, listScanFactor*limit-scanned)
		entries, err := s.indexPage(ctx, index, cur, chunk)
		if err != nil {
			return nil, "", err
		}
		runs, err := s.getRuns(ctx, entries)
		if err != nil {
			return nil, "", err
		}
		if index == s.liveKey() {
			if err := s.dropEnded(ctx, entries, runs); err != nil {
				return nil, "", err
			}
		}
		for i, e := range entries {
			scanned++
			cur = e
			if r, ok := runs[i]; ok && f.Matches(r) {
				out = append(out, r)
				if len(out) == limit {
					return out, encodeCursor(cur), nil
				}
			}
		}
		if len(entries) < chunk {
			return out, "", nil
		}
	}
	return out, encodeCursor(cur), nil
}

// indexEntry is one entry of the run index and a position of a cursor.
type indexEntry struct {
	score  int64 // created-at, unix ms
	member string
}

// indexPage returns up to count entries of the run index at key strictly
// after cur (from the newest when cur is the zero entry).
func (s *Store) indexPage(ctx context.Context, key string, cur indexEntry, count int) ([]indexEntry, error) {
	v, err := s.call(ctx, s.scripts.listRuns, "list runs", []string{key}, struct {
		Score  string `json:"score"` // text: the script writes it after "(" as it is
		Member string `json:"member"`
		Count  int    `json:"count"`
	}{strconv.FormatInt(cur.score, 10), cur.member, count})
	if err != nil {
		return nil, err
	}
	list, err := replyList(v, 0)
	if err != nil || len(list)%2 != 0 {
		return nil, fmt.Errorf("list runs: unexpected index reply %v", v)
	}
	out := make([]indexEntry, 0, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		member, ok1 := list[i].(string)
		raw, ok2 := list[i+1].(string)
		f, err := strconv.ParseFloat(raw, 64)
		if !ok1 || !ok2 || err != nil {
			return nil, fmt.Errorf("list runs: unexpected index entry %v %v", list[i], list[i+1])
		}
		out = append(out, indexEntry{score: int64(math.Round(f)), member: member})
	}
	return out, nil
}

// getRuns reads the runs of entries in one round trip. A run missing from
// the store (an index entry left behind) has no entry in the result.
func (s *Store) getRuns(ctx context.Context, entries []indexEntry) (map[int]pipeline.Run, error) {
	cmds := make([]*redis.MapStringStringCmd, len(entries))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range entries {
			cmds[i] = p.HGetAll(ctx, s.runKey(e.member))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out := make(map[int]pipeline.Run, len(entries))
	for i, c := range cmds {
		if len(c.Val()) == 0 {
			continue
		}
		r, err := decodeRun(entries[i].member, mapFields(c.Val()))
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// A cursor is "<score>:<member>" in unpadded URL-safe base64: opaque to
// callers, safe in a query string.
func encodeCursor(e indexEntry) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(e.score, 10) + ":" + e.member))
}

func decodeCursor(c string) (indexEntry, error) {
	if c == "" {
		return indexEntry{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return indexEntry{}, fmt.Errorf("%w: cursor %q", ErrInvalid, c)
	}
	score, member, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(score, 10, 64)
	if !ok || err != nil || member == "" {
		return indexEntry{}, fmt.Errorf("%w: cursor %q", ErrInvalid, c)
	}
	return indexEntry{score: n, member: member}, nil
}

// dropEnded takes the runs among entries that have ended out of the live
// index: a retirement whose write was lost, or one still to come (which
// then finds nothing to take). An entry without a run stays: its run may be
// being created (the indexes are written before the run), and one never
// written leaves every index when the sweeper finds it gone.
func (s *Store) dropEnded(ctx context.Context, entries []indexEntry, runs map[int]pipeline.Run) error {
	var ended []any
	for i, e := range entries {
		if r, ok := runs[i]; ok && r.Status == pipeline.RunDone {
			ended = append(ended, e.member)
		}
	}
	if len(ended) == 0 {
		return nil
	}
	if err := s.rdb.ZRem(ctx, s.liveKey(), ended...).Err(); err != nil {
		return fmt.Errorf("list runs: drop ended runs from the live index: %w", err)
	}
	return nil
}
