package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// aliveKeep is how long a worker's last heartbeat stays in the alive index
// before a heartbeat of any worker takes it out.
const aliveKeep = time.Hour

// Heartbeat records that worker (an instance id, one per process start) is
// alive at now, and returns the workers whose last heartbeat is within ttl
// of now, worker included: one round trip. A worker writes outbox marks
// before it publishes (CommitStep's DispatchedBy) and is trusted to publish
// them while it is alive; once its heartbeats stop for ttl, whoever reads
// its marks publishes again what they mark. Entries older than an hour are
// dropped on the way.
func (s *Store) Heartbeat(ctx context.Context, worker string, now time.Time, ttl time.Duration) (map[string]bool, error) {
	var live *redis.StringSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, s.aliveKey(), redis.Z{Score: float64(toMillis(now)), Member: worker})
		p.ZRemRangeByScore(ctx, s.aliveKey(), "-inf", "("+strconv.FormatInt(toMillis(now.Add(-aliveKeep)), 10))
		live = p.ZRangeByScore(ctx, s.aliveKey(), &redis.ZRangeBy{Min: strconv.FormatInt(toMillis(now.Add(-ttl)), 10), Max: "+inf"})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat of %s: %w", worker, err)
	}
	out := make(map[string]bool, len(live.Val()))
	for _, w := range live.Val() {
		out[w] = true
	}
	return out, nil
}
