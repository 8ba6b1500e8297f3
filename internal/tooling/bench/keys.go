package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline/store"
)

// keyCopies is how many copies of each key KeyBytes restores: enough that
// the database's table growing once within them is a few bytes a copy.
const keyCopies = 2000

// keyBytesDB is the database the copies go to: one a stepwise stack does
// not use (it uses 0).
const keyBytesDB = 9

// KeyBytes measures the Redis memory the keys of one run hold, by kind:
// what follows the run's hash tag up to the next ":" (run, msgs, events,
// call, step, ...), summed over the keys of a kind (a run of ten steps has
// nine calls). Each key is DUMPed and restored keyCopies times, with its
// time to live, into database keyBytesDB of its server, empty, and the
// growth of used_memory (less the clients' buffers) divided; the copies
// are deleted after. The index entries the run has in the global sorted
// sets are not keys of its own and are not counted. It gives nil for a
// Redis Cluster (one database), a Redis that cannot DUMP, or a server
// whose keyBytesDB holds keys.
func KeyBytes(ctx context.Context, rdb redis.UniversalClient, runID string) (map[string]float64, error) {
	c, ok := rdb.(*redis.Client)
	if !ok {
		return nil, nil
	}
	opts := *c.Options()
	opts.DB = keyBytesDB
	dst := redis.NewClient(&opts)
	defer func() { _ = dst.Close() }()
	if n, err := dst.DBSize(ctx).Result(); err != nil || n > 0 {
		return nil, nil // not ours to write to
	}
	var keys []string
	iter := c.Scan(ctx, 0, store.DefaultPrefix+":{"+runID+"}:*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("keys of run %s: %w", runID, err)
	}
	out := map[string]float64{}
	for _, key := range keys {
		b, err := copiesBytes(ctx, c, dst, key)
		if err != nil || b < 0 {
			return nil, err
		}
		out[keyKind(key)] += b
	}
	return out, nil
}

// copiesBytes restores keyCopies copies of key from src into dst and gives
// what each holds (-1 when src cannot DUMP it).
func copiesBytes(ctx context.Context, src, dst *redis.Client, key string) (float64, error) {
	dump, err := src.Dump(ctx, key).Result()
	if err != nil { // a Redis that cannot (miniredis), or the key gone
		return -1, nil
	}
	ttl, err := src.PTTL(ctx, key).Result()
	if err != nil || ttl < 0 {
		ttl = 0
	}
	names := make([]string, keyCopies)
	for i := range names {
		names[i] = fmt.Sprintf("%s#%05d", key, i)
	}
	before, okBefore := readNodeStats(ctx, dst)
	_, restoreErr := dst.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, name := range names {
			p.RestoreReplace(ctx, name, ttl, dump)
		}
		return nil
	})
	after, okAfter := readNodeStats(ctx, dst)
	// The copies go whatever happened: a copy left behind would make the
	// database look in use to the next measurement, which would skip it.
	if err := dst.Del(ctx, names...).Err(); err != nil {
		return 0, fmt.Errorf("delete the copies of %s: %w", key, err)
	}
	if restoreErr != nil {
		return 0, fmt.Errorf("restore copies of %s: %w", key, restoreErr)
	}
	if !okBefore || !okAfter { // a growth from or to a failed read would be a made-up figure
		return 0, fmt.Errorf("copies of %s: the server's INFO could not be read around them", key)
	}
	return float64(after.UsedMemory-before.UsedMemory) / keyCopies, nil
}

// keyKind is what a run's key is: what follows its hash tag, up to the
// next ":" ("call" of "sw:{r}:call:c1").
func keyKind(key string) string {
	_, rest, _ := strings.Cut(key, "}:")
	kind, _, _ := strings.Cut(rest, ":")
	return kind
}
