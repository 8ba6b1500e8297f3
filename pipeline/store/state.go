package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
)

// stateKey is the hash of a run's persistent plugin state: key → JSON.
func (s *Store) stateKey(runID string) string { return s.prefix + ":{" + runID + "}:state" }

// withState appends the run's state hash as the last key and the updates as
// the last arguments (key, value pairs, "" deleting, then their count), the
// layout CommitStep's and EndStep's scripts read.
func (s *Store) withState(runID string, keys []string, args []any, updates []pipeline.StateUpdate) ([]string, []any) {
	keys = append(keys, s.stateKey(runID))
	for _, u := range updates {
		args = append(args, u.Key, string(u.Value))
	}
	return keys, append(args, len(updates))
}

// RunState returns a run's persistent plugin state (empty for a run without
// any, or an unknown run).
func (s *Store) RunState(ctx context.Context, runID string) (map[string]json.RawMessage, error) {
	all, err := s.rdb.HGetAll(ctx, s.stateKey(runID)).Result()
	if err != nil {
		return nil, fmt.Errorf("state of run %s: %w", runID, err)
	}
	out := make(map[string]json.RawMessage, len(all))
	for k, v := range all {
		out[k] = json.RawMessage(v)
	}
	return out, nil
}
