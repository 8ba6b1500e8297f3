package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Archive (runs.archive, ADR 0070). A store WithArchive gives an ended
// run's keys no time to live when it ends: they live until the run is
// archived, and Archived then gives them the retention. So the retention
// never deletes a run that has not been archived, whatever the time
// between its end and its archiving (a broker down, a worker dead).

// WithArchive makes ended runs wait for their archiving (Archived) before
// their retention starts. Every store that ends runs on one Redis must be
// told alike: a store without it starts the retention at the end.
func WithArchive() Option {
	return func(s *Store) { s.archive = true }
}

// endTTL is the time to live the scripts give an ended run's keys when it
// ends: the retention, or none while the run waits for its archiving.
func (s *Store) endTTL() int64 {
	if s.archive {
		return 0
	}
	return s.retention.Milliseconds()
}

// Archived gives the keys of an ended run that has been archived the
// retention to live (nothing with a retention of 0): its record,
// messages, events, plugin state, decision ids, held decisions, outcome
// outbox and the calls named (callIDs, as RunCalls read them). Keys that
// are gone are left so; calling it again restarts the retention.
func (s *Store) Archived(ctx context.Context, runID string, callIDs []string) error {
	if s.retention <= 0 {
		return nil
	}
	keys := []string{s.runKey(runID), s.msgsKey(runID), s.eventsKey(runID), s.stateKey(runID),
		s.decisionsKey(runID), s.heldKey(runID), s.outcomesKey(runID)}
	for _, id := range callIDs {
		keys = append(keys, s.callKey(runID, id))
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.PExpire(ctx, k, s.retention)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("start the retention of archived run %s: %w", runID, err)
	}
	return nil
}
