package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Snapshot is what a reconcile reads of a run: its record, the calls of its
// current step in index order, the decisions held for its calls, and when
// the sweeper looks at it next (zero: it is not scheduled).
type Snapshot struct {
	Run       pipeline.Run
	Calls     []pipeline.ToolCall
	Held      []HeldDecision
	HeldKnown bool // Held was read with Run (false: not read, Held is empty)
	Scheduled time.Time
	// Outcomes are the decision outcomes and approval requests not yet
	// published (outcomes.go), claimed for the reader when it read with a
	// claim.
	Outcomes []Outcome
	// OutboxClaimedUntil is, when a claim withheld the outbox's entries
	// from this read (another reader holds it), when that claim runs out:
	// a reconcile that takes a waiting run off the schedule comes back
	// then, in case that reader died before it published them. Zero when
	// nothing was withheld.
	OutboxClaimedUntil time.Time
}

// Snapshot reads the run, the calls of its current step, its held
// decisions, the decision outcomes waiting in its outbox and its sweep
// time, in one round trip: a script reads the run's own keys (one slot)
// and the sweep time goes beside it in the same pipeline. Each part is
// consistent with the others except the sweep time, which lives in the
// global schedule; every write that acts on a snapshot is a script that
// checks what it expects. An unknown run is ErrNotFound.
//
// With claim > 0 the outcomes come claimed for claim, as ClaimOutcomes
// takes them (none while another holds the claim): the caller publishes
// them and calls OutcomesSent. With 0 they are read as they are.
func (s *Store) Snapshot(ctx context.Context, runID string, claim time.Duration, now time.Time) (Snapshot, error) {
	return s.snapshot(ctx, runID, claim, now, nil)
}

// snapshot is Snapshot with the commands before adds (nil: none) sent
// ahead of the read, in its round trip; an error of theirs is the
// snapshot's.
func (s *Store) snapshot(ctx context.Context, runID string, claim time.Duration, now time.Time, before func(p redis.Pipeliner) []redis.Cmder) (Snapshot, error) {
	what := "snapshot of run " + runID
	keys := []string{s.runKey(runID), s.heldKey(runID), s.outcomesKey(runID), s.outcomesClaimKey(runID)}
	claimMS := int64(0)
	if claim > 0 {
		claimMS = max(claim.Milliseconds(), 1)
	}
	c, err := callOf(s.scripts.snapshot, keys, claimArg{Count: outcomesBatch, Now: toMillis(now), Claim: claimMS})
	if err != nil {
		return Snapshot{}, fmt.Errorf("%s: %w", what, err)
	}
	var sched *redis.FloatCmd
	var ahead []redis.Cmder
	v, err := s.evalAmong(ctx, c, func(p redis.Pipeliner, eval func()) {
		if before != nil {
			ahead = before(p)
		}
		eval()
		sched = p.ZScore(ctx, s.activeKey(), runID)
	})
	for _, c := range ahead {
		if err == nil && c.Err() != nil {
			err = c.Err()
		}
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := sched.Err(); err != nil && !errors.Is(err, redis.Nil) { // Nil: not scheduled
		return Snapshot{}, fmt.Errorf("%s: %w", what, err)
	}
	snap, err := s.decodeSnapshot(runID, v)
	if err == nil && sched.Err() == nil {
		snap.Scheduled = fromMillis(int64(sched.Val()))
	}
	return snap, err
}

// decodeSnapshot decodes the snapshot script's reply.
func (s *Store) decodeSnapshot(runID string, v any) (Snapshot, error) {
	reply, err := replyList(v, 1)
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{HeldKnown: true}
	runHash, err := pairs(reply[0])
	if err != nil {
		return Snapshot{}, err
	}
	if snap.Run, err = decodeRun(runID, runHash); err != nil {
		return Snapshot{}, err
	}
	if len(reply) != 6 {
		return Snapshot{}, fmt.Errorf("snapshot of run %s: unexpected reply of %d parts", runID, len(reply))
	}
	held, err := flatMap(reply[1])
	if err != nil {
		return Snapshot{}, err
	}
	if snap.Held, err = decodeHeld(runID, held); err != nil {
		return Snapshot{}, err
	}
	outcomes, err := xMessages(reply[2])
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot of run %s: %w", runID, err)
	}
	snap.Outcomes = decodeOutcomes(runID, outcomes)
	if busy, _ := reply[5].(int64); busy > 0 {
		snap.OutboxClaimedUntil = fromMillis(busy)
	}
	ids, _ := reply[3].([]any)
	hashes, _ := reply[4].([]any)
	if len(ids) != len(hashes) {
		return Snapshot{}, fmt.Errorf("snapshot of run %s: %d call ids, %d calls", runID, len(ids), len(hashes))
	}
	snap.Calls = make([]pipeline.ToolCall, 0, len(ids))
	for i, id := range ids {
		callID, _ := id.(string)
		h, err := pairs(hashes[i])
		if err != nil {
			return Snapshot{}, err
		}
		call, err := decodeCall(runID, callID, h)
		if err != nil {
			return Snapshot{}, err
		}
		snap.Calls = append(snap.Calls, call)
	}
	return snap, nil
}
