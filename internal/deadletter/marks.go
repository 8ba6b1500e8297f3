package deadletter

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// marks records in Redis which dead-letter records have been re-driven:
// one string key per record, <prefix>:{dlq:<dead-letter topic>}:<partition>:<offset>,
// whose value is "claimed" while a redrive publishes the record and
// "redriven:<unix ms>" once it has. All keys of one dead-letter topic share
// a hash tag, so one MGET reads them on Redis Cluster too.
type marks struct {
	rdb  redis.UniversalClient
	base string
}

const (
	claimedValue   = "claimed"
	redrivenPrefix = "redriven:"
	// mgetBatch bounds the keys of one MGET.
	mgetBatch = 1000
)

func newMarks(rdb redis.UniversalClient, prefix, deadLetterTopic string) marks {
	return marks{rdb: rdb, base: prefix + ":{dlq:" + deadLetterTopic + "}:"}
}

func (m marks) key(r Record) string {
	return m.base + strconv.FormatInt(int64(r.Partition), 10) + ":" + strconv.FormatInt(r.Offset, 10)
}

// load sets the State (and RedrivenAt) of every record from its mark.
func (m marks) load(ctx context.Context, recs []Record) error {
	for start := 0; start < len(recs); start += mgetBatch {
		batch := recs[start:min(start+mgetBatch, len(recs))]
		keys := make([]string, len(batch))
		for i, r := range batch {
			keys[i] = m.key(r)
		}
		vals, err := m.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return fmt.Errorf("read re-drive marks: %w", err)
		}
		for i, v := range vals {
			s, _ := v.(string) // nil: no mark
			batch[i].State, batch[i].RedrivenAt = parseMark(s)
		}
	}
	return nil
}

// parseMark reads a mark's value; an unknown value counts as claimed, so
// a record with a mark this version does not understand is not re-driven.
func parseMark(v string) (State, time.Time) {
	switch {
	case v == "":
		return StateDead, time.Time{}
	case strings.HasPrefix(v, redrivenPrefix):
		ms, _ := strconv.ParseInt(strings.TrimPrefix(v, redrivenPrefix), 10, 64)
		return StateRedriven, time.UnixMilli(ms)
	default:
		return StateClaimed, time.Time{}
	}
}

// claim marks r claimed for hold, unless it has a mark already; it reports
// whether the claim is this caller's. Of concurrent claims, one wins.
func (m marks) claim(ctx context.Context, r Record, hold time.Duration) (bool, error) {
	ok, err := m.rdb.SetNX(ctx, m.key(r), claimedValue, hold).Result()
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", r.ID(), err)
	}
	return ok, nil
}

// confirm marks r re-driven at at, for ttl (0: for good).
func (m marks) confirm(ctx context.Context, r Record, at time.Time, ttl time.Duration) error {
	v := redrivenPrefix + strconv.FormatInt(at.UnixMilli(), 10)
	if err := m.rdb.Set(ctx, m.key(r), v, ttl).Err(); err != nil {
		return fmt.Errorf("mark %s re-driven: %w", r.ID(), err)
	}
	return nil
}
