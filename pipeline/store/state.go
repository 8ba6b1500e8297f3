package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
)

// stateKey is the hash of a run's persistent plugin state: key → JSON.
func (s *Store) stateKey(runID string) string { return s.prefix + ":{" + runID + "}:state" }

// withState ends c's keys with the run's state hash, and withUpdates its
// arguments with the state updates: the layout CommitStep's and EndStep's
// scripts read.
func (s *Store) withState(c *script, runID string) { c.key(s.stateKey(runID)) }

// withUpdates ends c's arguments with the state updates, as key, value
// pairs ("" deletes), and their count.
func withUpdates(c *script, updates []pipeline.StateUpdate) {
	for _, u := range updates {
		c.arg(u.Key, string(u.Value))
	}
	c.arg(len(updates))
}

// stateUpdate is a plugin state update as a script's argument takes it
// (lib.lua's put_state): the value as a string, "" to delete the key.
type stateUpdate struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// stateUpdates are updates as a script's argument takes them: never null.
func stateUpdates(updates []pipeline.StateUpdate) []stateUpdate {
	out := make([]stateUpdate, len(updates))
	for i, u := range updates {
		out[i] = stateUpdate{u.Key, string(u.Value)}
	}
	return out
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
