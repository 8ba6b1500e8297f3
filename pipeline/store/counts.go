package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Counts are the sizes of the global indexes: what a metrics scrape shows
// of the whole deployment in one round trip.
type Counts struct {
	Active int64 // runs not yet retired: created, running, waiting, or ended with the result not yet published
	Parked int64 // calls suspended, waiting for a decision
}

// Count reads the sizes of the live and pending indexes. The live index
// (not the sweep schedule, which a run waiting without a deadline leaves)
// is what holds every run not yet retired; a Redis written before it
// existed has its runs added first, once (listLiveOnce).
func (s *Store) Count(ctx context.Context) (Counts, error) {
	if err := s.listLiveOnce(ctx); err != nil {
		return Counts{}, fmt.Errorf("count the indexes: %w", err)
	}
	var active, parked *redis.IntCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		active = p.ZCard(ctx, s.liveKey())
		parked = p.ZCard(ctx, s.pendingKey())
		return nil
	})
	if err != nil {
		return Counts{}, fmt.Errorf("count the indexes: %w", err)
	}
	return Counts{Active: active.Val(), Parked: parked.Val()}, nil
}
