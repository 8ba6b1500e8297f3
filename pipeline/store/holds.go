package store

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Holds: the budget holds of a run's step claims (budgets.go) are recorded
// with the run, so that a hold whose settle failed is settled, or given
// back, from the run's state (ADR 0053). A claim records its hold before
// it reserves, records what its inference used before it settles, and
// forgets the hold once every budget is settled.
//
//	<p>:{<run>}:holds   HASH  <claim> → "" while its use is unknown,
//	                          "<tokens> <cost>" once it is known
//
// The key expires two retentions after its last write, like a batch's
// budget: it is empty, and gone, unless a settle failed.

// Hold is a claim's hold of its run's budgets, as the run records it.
type Hold struct {
	Claim string
	Used  *Amounts // what its inference used; nil: not known (it failed or never ended), the hold comes back whole
}

func (s *Store) holdsKey(runID string) string { return s.prefix + ":{" + runID + "}:holds" }

// RecordHold records that claim is about to hold the run's budgets, and
// returns the holds the run's other claims left recorded, in the same
// round trip.
func (s *Store) RecordHold(ctx context.Context, runID, claim string) ([]Hold, error) {
	var read *redis.MapStringStringCmd
	if err := s.writeHold(ctx, runID, claim, "", func(p redis.Pipeliner) { read = p.HGetAll(ctx, s.holdsKey(runID)) }); err != nil {
		return nil, err
	}
	h := read.Val()
	delete(h, claim)
	return decodeHolds(runID, h)
}

// HoldUsed records what claim's inference used, before its settle.
func (s *Store) HoldUsed(ctx context.Context, runID, claim string, used Amounts) error {
	return s.writeHold(ctx, runID, claim, strconv.FormatInt(used.Tokens, 10)+" "+strconv.FormatInt(used.Cost, 10), nil)
}

// writeHold sets claim's record to value, after the commands read adds
// (nil: none), in one pipeline.
func (s *Store) writeHold(ctx context.Context, runID, claim, value string, read func(redis.Pipeliner)) error {
	key := s.holdsKey(runID)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if read != nil {
			read(p)
		}
		p.HSet(ctx, key, claim, value)
		if s.retention > 0 {
			p.PExpire(ctx, key, 2*s.retention)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record the budget hold of %s on run %s: %w", claim, runID, err)
	}
	return nil
}

// HoldSettled forgets claim's hold of the run's budgets: every budget it
// held is settled.
func (s *Store) HoldSettled(ctx context.Context, runID, claim string) error {
	if err := s.rdb.HDel(ctx, s.holdsKey(runID), claim).Err(); err != nil {
		return fmt.Errorf("forget the budget hold of %s on run %s: %w", claim, runID, err)
	}
	return nil
}

// Holds returns the holds recorded with the run, by claim.
func (s *Store) Holds(ctx context.Context, runID string) ([]Hold, error) {
	h, err := s.rdb.HGetAll(ctx, s.holdsKey(runID)).Result()
	if err != nil {
		return nil, fmt.Errorf("budget holds of run %s: %w", runID, err)
	}
	return decodeHolds(runID, h)
}

func decodeHolds(runID string, h map[string]string) ([]Hold, error) {
	out := make([]Hold, 0, len(h))
	for claim, v := range h {
		hold := Hold{Claim: claim}
		if v != "" {
			tokens, cost, _ := strings.Cut(v, " ")
			t, err1 := strconv.ParseInt(tokens, 10, 64)
			c, err2 := strconv.ParseInt(cost, 10, 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("budget hold of %s on run %s: malformed use %q", claim, runID, v)
			}
			hold.Used = &Amounts{Tokens: t, Cost: c}
		}
		out = append(out, hold)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Claim < out[j].Claim })
	return out, nil
}
