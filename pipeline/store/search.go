package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/encoding/json"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Search indexes (ADR 0069). Beside the run index, one sorted set per
// searchable value, scored as the run index is (created at, unix ms), so
// that a search reads the runs of its most selective value rather than
// every run:
//
//	<p>:runs:a:<agent>        ZSET   the runs of an agent
//	<p>:runs:b:<batch>        ZSET   the runs of a batch
//	<p>:runs:m:<key>=<value>  ZSET   the runs whose metadata has value at key, a
//	                                 key the store was given (WithSearchableMetadata)
//	<p>:runs:searched         HASH   run id → the index suffixes the run is in,
//	                                 JSON (["a:<agent>", ...]), for the trim
//
// The create writes them with the run's other indexes (one pipeline, no
// round trip of its own); the trim of a retired run takes it out of the
// ones its entry in <p>:runs:searched names, and the entry, so they hold
// what the run index holds. A Redis written before them (or before a
// metadata key was declared) has its runs added once, by the first search
// that reads them (searchOnce).

// MaxSearchValue is the longest metadata value, in bytes, a search index
// holds: a longer value is not indexed, and a search for one is refused.
const MaxSearchValue = 256

// WithSearchableMetadata names the metadata keys whose values runs are
// indexed by, for ListFilter.Meta (default none). Every process that
// creates runs should be given the same keys (runs.searchable_metadata).
func WithSearchableMetadata(keys ...string) Option {
	return func(s *Store) { s.searchable = slices.Sorted(slices.Values(keys)) }
}

// Searchable reports whether runs are indexed by metadata key.
func (s *Store) Searchable(key string) bool {
	_, ok := slices.BinarySearch(s.searchable, key)
	return ok
}

func (s *Store) searchKey(suffix string) string { return s.prefix + ":runs:" + suffix }
func (s *Store) searchedKey() string            { return s.prefix + ":runs:searched" }

// searchIndexedKey marks the runs created before the search indexes (and
// before the keys now declared) as added to them.
func (s *Store) searchIndexedKey() string {
	return s.prefix + ":runs:searched:" + strings.Join(s.searchable, ",")
}

// The suffixes of the search indexes of one value.
func agentSuffix(agent string) string     { return "a:" + agent }
func batchSuffix(batch string) string     { return "b:" + batch }
func metaSuffix(key, value string) string { return "m:" + key + "=" + value }

// SearchValue is how a metadata value is searched for: a JSON string as its
// text, a number, true, false or null as its JSON text. An object, an array
// or a value longer than MaxSearchValue has none (false).
func SearchValue(raw json.RawMessage) (string, bool) {
	var text string
	switch v := strings.TrimSpace(string(raw)); {
	case v == "" || v[0] == '{' || v[0] == '[':
		return "", false
	case v[0] == '"':
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", false
		}
	default:
		text = v
	}
	return text, len(text) <= MaxSearchValue
}

// searchSuffixes are the search indexes run belongs in: its agent's, its
// batch's and one per searchable metadata key it has a value at.
func (s *Store) searchSuffixes(run pipeline.Run) []string {
	out := []string{agentSuffix(run.Agent)}
	if run.Batch != "" {
		out = append(out, batchSuffix(run.Batch))
	}
	if len(s.searchable) == 0 || len(run.Metadata) == 0 {
		return out
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(run.Metadata, &meta) != nil {
		return out
	}
	for _, k := range s.searchable {
		if v, ok := SearchValue(meta[k]); ok {
			out = append(out, metaSuffix(k, v))
		}
	}
	return out
}

// indexSearch queues in p the run's entries in its search indexes (NX: a
// replay keeps its place) and the list of them the trim reads (NX: a
// create that conflicts with the run leaves the run's own list); it
// returns the commands, for their errors.
func (s *Store) indexSearch(ctx context.Context, p redis.Pipeliner, run pipeline.Run, z redis.Z) []redis.Cmder {
	suffixes := s.searchSuffixes(run)
	cmds := make([]redis.Cmder, 0, len(suffixes)+1)
	for _, x := range suffixes {
		cmds = append(cmds, p.ZAddNX(ctx, s.searchKey(x), z))
	}
	list, _ := json.Marshal(suffixes)
	return append(cmds, p.HSetNX(ctx, s.searchedKey(), run.ID, list))
}

// unindexSearch queues in p the removal of runs from the search indexes
// their lists (read from <p>:runs:searched, in the order of runIDs) name,
// and of the lists.
func (s *Store) unindexSearch(ctx context.Context, p redis.Pipeliner, runIDs []string, lists []any) {
	if len(runIDs) == 0 {
		return
	}
	byIndex := map[string][]any{}
	for i, id := range runIDs {
		var suffixes []string
		if text, ok := lists[i].(string); ok {
			_ = json.Unmarshal([]byte(text), &suffixes) // unreadable: nothing to take out
		}
		for _, x := range suffixes {
			byIndex[x] = append(byIndex[x], id)
		}
	}
	for x, ids := range byIndex {
		p.ZRem(ctx, s.searchKey(x), ids...)
	}
	p.HDel(ctx, s.searchedKey(), runIDs...)
}

// searchIndexes are the search indexes that hold every run f can match:
// its agent's, its batch's, its metadata values'.
func (s *Store) searchIndexes(f ListFilter) []string {
	var out []string
	if f.Agent != "" {
		out = append(out, s.searchKey(agentSuffix(f.Agent)))
	}
	if f.Batch != "" {
		out = append(out, s.searchKey(batchSuffix(f.Batch)))
	}
	for _, k := range slices.Sorted(maps.Keys(f.Meta)) {
		out = append(out, s.searchKey(metaSuffix(k, f.Meta[k])))
	}
	return out
}

// searchOnce adds the runs created before the search indexes, or before
// the metadata keys now declared, to them: it walks the run index from
// the newest (as addRunsOnce), reads each run's agent, batch and metadata,
// and adds it to its indexes, merging its list with the one it has.
func (s *Store) searchOnce(ctx context.Context) error {
	return s.once(ctx, &s.searchListed, s.searchIndexedKey(), "index runs for search", func() error {
		for offset := int64(0); ; offset += runsChunk {
			entries, err := s.rdb.ZRevRangeWithScores(ctx, s.runsKey(), offset, offset+runsChunk-1).Result()
			if err != nil {
				return err
			}
			if err := s.addSearched(ctx, entries); err != nil {
				return err
			}
			if len(entries) < runsChunk {
				return nil
			}
		}
	})
}

// addSearched adds the runs of entries of the run index to their search
// indexes: one round trip reads them and their lists, one writes.
func (s *Store) addSearched(ctx context.Context, entries []redis.Z) error {
	fields := make([]*redis.SliceCmd, len(entries))
	lists := make([]*redis.StringCmd, len(entries))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range entries {
			id := fmt.Sprint(e.Member)
			if checkRunID(id) != nil {
				id = "-" // a malformed entry: its read finds nothing
			}
			fields[i] = p.HMGet(ctx, s.runKey(id), "agent", "batch", "metadata")
			lists[i] = p.HGet(ctx, s.searchedKey(), id)
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return err
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range entries {
			v := fields[i].Val()
			agent, _ := v[0].(string)
			if agent == "" {
				continue // gone, or not a run
			}
			batch, _ := v[1].(string)
			meta, _ := v[2].(string)
			run := pipeline.Run{ID: fmt.Sprint(e.Member), Agent: agent, Batch: batch, Metadata: json.RawMessage(meta)}
			suffixes := s.searchSuffixes(run)
			var had []string
			_ = json.Unmarshal([]byte(lists[i].Val()), &had) // none yet: ""
			for _, x := range suffixes {
				p.ZAddNX(ctx, s.searchKey(x), e)
			}
			for _, x := range had {
				if !slices.Contains(suffixes, x) {
					suffixes = append(suffixes, x)
				}
			}
			list, _ := json.Marshal(suffixes)
			p.HSet(ctx, s.searchedKey(), run.ID, list)
		}
		return nil
	})
	return err
}
