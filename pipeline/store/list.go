package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"slices"
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
// A malformed cursor or status is ErrInvalid, and so is a metadata key that
// is not searchable (WithSearchableMetadata) or a value longer than
// MaxSearchValue.
//
// Each index that holds every run f can match is a candidate: the index of
// the live runs (those not ended and retired) for a status other than
// done, the tenant's own run index for a tenant other than the default one
// (tenantIndexed), the search indexes of its agent, batch and metadata
// values (search.go), else the index of every run. A page reads the
// smallest of them (one round trip counts them when there are several),
// from until down to since, and filters the rest from the runs it reads:
// the indexes order their entries alike, so a cursor holds whichever a
// page reads. An ended run leaves the live index as a page finds it.
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
	for k, v := range f.Meta {
		if !s.Searchable(k) {
			return nil, "", fmt.Errorf("%w: metadata key %q is not searchable (runs.searchable_metadata)", ErrInvalid, k)
		}
		if len(v) > MaxSearchValue {
			return nil, "", fmt.Errorf("%w: metadata value of %q is longer than %d bytes", ErrInvalid, k, MaxSearchValue)
		}
	}
	cur, err := decodeCursor(f.Cursor)
	if err != nil {
		return nil, "", err
	}
	index, err := s.listIndex(ctx, f)
	if err != nil {
		return nil, "", err
	}
	if !f.Until.IsZero() && (cur.member == "" || cur.score >= toMillis(f.Until)) {
		cur = indexEntry{score: toMillis(f.Until)} // no member: below until (indexPage)
	}
	out := []pipeline.Run{}
	for scanned := 0; scanned < listScanFactor*limit; {
		chunk := min(limit, listScanFactor*limit-scanned)
		entries, err := s.indexPage(ctx, index, cur, chunk)
		if err != nil {
			return nil, "", err
		}
		exhausted := len(entries) < chunk
		if !f.Since.IsZero() {
			since := toMillis(f.Since)
			if i := slices.IndexFunc(entries, func(e indexEntry) bool { return e.score < since }); i >= 0 {
				entries, exhausted = entries[:i], true
			}
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
		if exhausted {
			return out, "", nil
		}
	}
	return out, encodeCursor(cur), nil
}

// listIndex is the smallest of the indexes that hold every run f can
// match (ListRuns), each filled first with the runs created before it.
func (s *Store) listIndex(ctx context.Context, f ListFilter) (string, error) {
	candidates := []string{s.runsKey()}
	if f.Status != "" && f.Status != pipeline.RunDone {
		if err := s.listLiveOnce(ctx); err != nil {
			return "", err
		}
		candidates = append(candidates, s.liveKey())
	}
	if tenantIndexed(f.Tenant) {
		if err := s.listTenantsOnce(ctx); err != nil {
			return "", err
		}
		candidates = append(candidates, s.tenantRunsKey(f.Tenant))
	}
	if search := s.searchIndexes(f); len(search) > 0 {
		if err := s.searchOnce(ctx); err != nil {
			return "", err
		}
		candidates = append(candidates, search...)
	}
	if len(candidates) == 1 {
		return candidates[0], nil
	}
	sizes := make([]*redis.IntCmd, len(candidates))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range candidates {
			sizes[i] = p.ZCard(ctx, k)
		}
		return nil
	}); err != nil {
		return "", fmt.Errorf("list runs: size the indexes: %w", err)
	}
	smallest := 0
	for i, n := range sizes {
		if n.Val() < sizes[smallest].Val() {
			smallest = i
		}
	}
	return candidates[smallest], nil
}

// indexEntry is one entry of the run index and a position of a cursor.
type indexEntry struct {
	score  int64 // created-at, unix ms
	member string
}

// indexPage returns up to count entries of the run index at key strictly
// after cur: from the newest when cur is the zero entry, from those scored
// below cur's score when it names no member (a time to list before).
func (s *Store) indexPage(ctx context.Context, key string, cur indexEntry, count int) ([]indexEntry, error) {
	top := "+inf"
	if cur.score != 0 {
		top = "(" + strconv.FormatInt(cur.score, 10)
	}
	v, err := s.call(ctx, s.scripts.listRuns, "list runs", []string{key}, struct {
		Score  string `json:"score"` // text: the script writes it after "(" as it is
		Member string `json:"member"`
		Top    string `json:"top"` // a first page's bound: +inf, or (<ms>
		Count  int    `json:"count"`
	}{strconv.FormatInt(cur.score, 10), cur.member, top, count})
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
