package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Counts are the sizes of the global indexes: what a metrics scrape shows
// of the whole deployment in one round trip.
type Counts struct {
	Active int64 // runs not yet retired: running, waiting, or ended with the result not yet published
	Parked int64 // calls suspended, waiting for a decision
}

// Count reads the sizes of the active and pending indexes.
func (s *Store) Count(ctx context.Context) (Counts, error) {
	var active, parked *redis.IntCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		active = p.ZCard(ctx, s.activeKey())
		parked = p.ZCard(ctx, s.pendingKey())
		return nil
	})
	if err != nil {
		return Counts{}, fmt.Errorf("count the indexes: %w", err)
	}
	return Counts{Active: active.Val(), Parked: parked.Val()}, nil
}
