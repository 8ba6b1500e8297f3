package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Keep is a write of one key of a run's plugin state that cannot wait for
// the step's commit: what it holds cost a model call (a compaction's
// summary), and a step redelivered before its commit must find it rather
// than pay again.
type Keep struct {
	Key    string
	Expect json.RawMessage    // the value the writer read; nil: the key was unset
	Value  json.RawMessage    // what to keep; not empty
	Event  pipeline.EventType // appended with the write
	Data   any                // the event's data
}

// KeepState writes k while owner infers step of the run: the key is set to
// k.Value and k.Event appended, in one operation, if the key still holds
// k.Expect. It returns what the key holds afterwards — k.Value, or what an
// earlier writer kept, which this call then leaves alone (wrote false).
// ErrLeaseLost when owner no longer infers the step; ErrNotFound when there
// is no such run.
func (s *Store) KeepState(ctx context.Context, runID string, step int, owner string, k Keep, now time.Time) (kept json.RawMessage, wrote bool, err error) {
	if k.Key == "" || len(k.Value) == 0 {
		return nil, false, fmt.Errorf("%w: keep %q of run %s: a key and a value are required", ErrInvalid, k.Key, runID)
	}
	ev, err := newEntry(step, "", k.Event, now, k.Data)
	if err != nil {
		return nil, false, err
	}
	what := fmt.Sprintf("keep state %s of run %s at step %d for %s", k.Key, runID, step, owner)
	v, err := s.call(ctx, s.scripts.keepState, what, []string{s.runKey(runID), s.stateKey(runID), s.eventsKey(runID)}, struct {
		held
		Key    string `json:"key"`
		Expect string `json:"expect"`
		Value  string `json:"value"`
		Event  entry  `json:"event"`
	}{heldBy(step, owner), k.Key, string(k.Expect), string(k.Value), ev})
	if err != nil {
		return nil, false, err
	}
	reply, ok := v.([]any)
	if !ok || len(reply) != 2 {
		return nil, false, fmt.Errorf("%s: unexpected reply %v", what, v)
	}
	n, _ := reply[0].(int64)
	if now, _ := reply[1].(string); now != "" {
		kept = json.RawMessage(now)
	}
	return kept, n == 1, nil
}
