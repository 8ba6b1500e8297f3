package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// outcomesBatch is how many outcomes one read takes; a run rarely has more
// than a handful waiting.
const outcomesBatch = 100

// Outcome is an entry of the run's outbox, waiting to be published: what
// became of a decision (on the decision-outcomes topic), or a call's
// approval request (on approval-requests; AsksApproval). The scripts that
// apply, hold or reject a decision add its outcome in the same step as the
// change; a duplicate decision adds none. The scripts that park a call
// (CommitStep, FinishCall) add its approval request; the outcome that
// closes it follows it in the outbox.
type Outcome struct {
	ID         string          // the outbox entry's stream id
	RunID      string          // the run
	DecisionID string          // the decision ("" for an approval request)
	CallID     string          // the call it decides ("" for a cancel_run), or that asks
	Outcome    DecisionOutcome // applied, held or rejected
	Reason     string          // why it was held or rejected, or applied by stepwise
	// Ticket and ParkedAt name the parking an approval request asks about
	// (zero for a decision's outcome).
	Ticket   string
	ParkedAt time.Time
}

// AsksApproval reports whether the entry is a call's approval request
// rather than a decision's outcome.
func (o Outcome) AsksApproval() bool { return !o.ParkedAt.IsZero() }

// approvalAsk is an approval request as a script writes it to the outbox
// (lib.lua's ask_approval): the call and its parking's ticket and time.
type approvalAsk struct {
	Call   string `json:"call"`
	Ticket string `json:"ticket"`
	At     int64  `json:"at"`
}

// askOf is the approval request of call callID parked as p; nil for a
// parking that asks nobody (Parking.AwaitsDecision).
func askOf(callID string, p pipeline.Parking) *approvalAsk {
	if !p.AwaitsDecision() {
		return nil
	}
	return &approvalAsk{Call: callID, Ticket: p.Ticket, At: toMillis(p.ParkedAt)}
}

func (s *Store) outcomesKey(runID string) string { return s.prefix + ":{" + runID + "}:outcomes" }

func (s *Store) outcomesClaimKey(runID string) string {
	return s.prefix + ":{" + runID + "}:outcomes:claim"
}

// Outcomes returns the run's outcomes not yet published, oldest first (at
// most outcomesBatch), whoever is publishing them. Snapshot reads them too,
// in its round trip, to tell whether ClaimOutcomes has anything to take.
func (s *Store) Outcomes(ctx context.Context, runID string) ([]Outcome, error) {
	msgs, err := s.rdb.XRangeN(ctx, s.outcomesKey(runID), "-", "+", outcomesBatch).Result()
	if err != nil {
		return nil, fmt.Errorf("decision outcomes of run %s: %w", runID, err)
	}
	return decodeOutcomes(runID, msgs), nil
}

// ClaimOutcomes takes the run's waiting outcomes (at most outcomesBatch,
// oldest first) for one publisher for hold: concurrent claims get none, so
// two reconciles of a run do not both publish an outcome. The publisher
// publishes them and calls OutcomesSent; one that dies leaves them to be
// claimed again once hold has passed (then published again: at least
// once, and more than once only after a crash).
func (s *Store) ClaimOutcomes(ctx context.Context, runID string, hold time.Duration, now time.Time) ([]Outcome, error) {
	what := "claim decision outcomes of run " + runID
	v, err := s.call(ctx, s.scripts.claimOutcomes, what, []string{s.outcomesKey(runID), s.outcomesClaimKey(runID)},
		claimArg{Count: outcomesBatch, Now: toMillis(now), Claim: max(hold.Milliseconds(), 1)})
	if err != nil {
		return nil, err
	}
	msgs, err := xMessages(v)
	if err != nil {
		return nil, fmt.Errorf("claim decision outcomes of run %s: %w", runID, err)
	}
	return decodeOutcomes(runID, msgs), nil
}

// claimArg is claim_outcomes's and snapshot's argument: how many outcomes
// to read at most, now (ms) and how long to claim them (ms; 0: snapshot
// reads them unclaimed).
type claimArg struct {
	Count int   `json:"count"`
	Now   int64 `json:"now"`
	Claim int64 `json:"claim"`
}

// OutcomesSent deletes published entries from the run's outbox, ends the
// claim on it, and deletes the outbox once it is empty (an emptied stream
// keeps a few hundred bytes), in one script.
func (s *Store) OutcomesSent(ctx context.Context, runID string, sent []Outcome) error {
	if len(sent) == 0 {
		return nil
	}
	ids := make([]string, len(sent))
	for i, o := range sent {
		ids[i] = o.ID
	}
	_, err := s.call(ctx, s.scripts.outcomesSent, "mark decision outcomes of run "+runID+" sent",
		[]string{s.outcomesKey(runID), s.outcomesClaimKey(runID)}, struct {
			IDs []string `json:"ids"`
		}{ids})
	return err
}

// xMessages reads a script's XRANGE reply: {{id, {field, value, ...}}, ...}.
func xMessages(v any) ([]redis.XMessage, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("unexpected reply %T", v)
	}
	out := make([]redis.XMessage, 0, len(list))
	for _, e := range list {
		pair, ok := e.([]any)
		if !ok || len(pair) != 2 {
			return nil, fmt.Errorf("unexpected entry %v", e)
		}
		id, _ := pair[0].(string)
		fields, _ := pair[1].([]any)
		m := redis.XMessage{ID: id, Values: map[string]any{}}
		for i := 0; i+1 < len(fields); i += 2 {
			k, _ := fields[i].(string)
			m.Values[k] = fields[i+1]
		}
		out = append(out, m)
	}
	return out, nil
}

func decodeOutcomes(runID string, msgs []redis.XMessage) []Outcome {
	if len(msgs) == 0 {
		return nil
	}
	out := make([]Outcome, 0, len(msgs))
	for _, m := range msgs {
		str := func(k string) string { v, _ := m.Values[k].(string); return v }
		o := Outcome{
			ID: m.ID, RunID: runID, DecisionID: str("d"), CallID: str("c"),
			Outcome: DecisionOutcome(str("o")), Reason: str("r"), Ticket: str("t"),
		}
		if at, err := strconv.ParseInt(str("p"), 10, 64); err == nil {
			o.ParkedAt = fromMillis(at)
		}
		out = append(out, o)
	}
	return out
}

// Approval reads what the approval request o (AsksApproval) asks about, in
// one round trip: the run and the call, its Parking the one o names (the
// call's own, or one it had before it parked again: the request is
// published as it was asked, whatever the call has become since). A run
// or call that is gone, or a parking the call no longer keeps, is
// ErrNotFound.
func (s *Store) Approval(ctx context.Context, o Outcome) (pipeline.Run, pipeline.ToolCall, error) {
	what := "approval request of call " + o.CallID + " of run " + o.RunID
	var run, call *redis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		run = p.HGetAll(ctx, s.runKey(o.RunID))
		call = p.HGetAll(ctx, s.callKey(o.RunID, o.CallID))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return pipeline.Run{}, pipeline.ToolCall{}, fmt.Errorf("%s: %w", what, err)
	}
	if len(run.Val()) == 0 {
		return pipeline.Run{}, pipeline.ToolCall{}, fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	r, err := decodeRun(o.RunID, mapFields(run.Val()))
	if err != nil {
		return pipeline.Run{}, pipeline.ToolCall{}, err
	}
	c, err := decodeCall(o.RunID, o.CallID, mapFields(call.Val()))
	if err != nil {
		return pipeline.Run{}, pipeline.ToolCall{}, err
	}
	vals := make([]any, len(parkingReads))
	for i, f := range parkingReads {
		vals[i] = call.Val()[f]
	}
	if c.Parking, err = parkingOf(o.Ticket, o.ParkedAt, vals); err != nil {
		return pipeline.Run{}, pipeline.ToolCall{}, fmt.Errorf("%s: %w", what, err)
	}
	if c.Parking == nil || !c.Parking.ParkedAt.Equal(o.ParkedAt) {
		return pipeline.Run{}, pipeline.ToolCall{}, fmt.Errorf("%w: %s: no parking at %s", ErrNotFound, what, o.ParkedAt)
	}
	return r, c, nil
}
