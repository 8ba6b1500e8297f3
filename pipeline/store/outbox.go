package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// The outbox marks. A state that asks for a message (a pending step asks
// for StepRequested, a new or resumed call for ToolCallRequested, a running
// call whose lease ran out for another one) is written first; the message
// is published after it, and then marked as sent here, with the time. A
// process that dies between the two leaves the mark unset, and the next
// reconcile of the run publishes the message again: the publish is at least
// once. A reconcile that finds the mark set publishes again only once the
// mark is old (dispatch_timeout; a lease for a dead claim), so a backlog in
// Kafka is not re-published on every look. A mark is "<generation>@<unix
// ms>": the generation names what was sent (the step number; the call's
// state, see generation), so a late mark of an older state never marks a
// newer one.

// generation names the request a call's current state asks for: "new" for
// the model's call, "d:<decision id>" for a call that decision resumed,
// "a<attempts>" for a running call whose claim died; "" for a call that
// asks for none.
func generation(c pipeline.ToolCall) string {
	switch c.Status {
	case pipeline.CallNew:
		return "new"
	case pipeline.CallResuming:
		if c.Decision != nil {
			return decisionGeneration(c.Decision.ID)
		}
	case pipeline.CallRunning:
		return "a" + strconv.Itoa(c.Attempts)
	}
	return ""
}

// decisionGeneration is the generation of a call resumed by decision id.
func decisionGeneration(id string) string { return "d:" + id }

// sentMark is the mark of generation gen sent at now.
func sentMark(gen string, now time.Time) string {
	return gen + "@" + strconv.FormatInt(toMillis(now), 10)
}

// beingSentMark is the mark a worker writes before it publishes the
// message, in the same script as the state that asks for it (CommitStep,
// for the calls it dispatches): "<generation>@<unix ms>@<worker>". The
// worker is an instance id without "@"; whoever reads the mark trusts it
// while that worker is alive (store.Heartbeat), since a live worker
// publishes what it marked or clears the mark.
func beingSentMark(gen string, at time.Time, worker string) string {
	return sentMark(gen, at) + "@" + worker
}

// sentAt reads a mark: when gen was sent, or zero when the mark is of
// another generation (or there is none).
func sentAt(mark, gen string) time.Time {
	at, _ := readMark(mark, gen)
	return at
}

// readMark reads a mark, sentMark's or beingSentMark's: when gen was sent
// (zero when the mark is of another generation, or there is none) and, for
// a mark written before the publish, by which worker. It reads from the
// end, so a generation may hold "@" (a decision id may).
func readMark(mark, gen string) (time.Time, string) {
	rest, last, ok := cutLast(mark)
	if !ok || gen == "" {
		return time.Time{}, ""
	}
	by := ""
	if _, err := strconv.ParseInt(last, 10, 64); err != nil {
		by = last
		if rest, last, ok = cutLast(rest); !ok {
			return time.Time{}, ""
		}
	}
	n, err := strconv.ParseInt(last, 10, 64)
	if err != nil || rest != gen {
		return time.Time{}, ""
	}
	return fromMillis(n), by
}

// cutLast cuts s around its last "@".
func cutLast(s string) (before, after string, found bool) {
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// MarkRequested records that StepRequested for step `step` of the run was
// published at now (Run.RequestedAt reads it while the run is at that
// step). A run that no longer exists is left alone.
func (s *Store) MarkRequested(ctx context.Context, runID string, step int, now time.Time) error {
	return s.mark(ctx, s.scripts.markSent, "mark step "+strconv.Itoa(step)+" of run "+runID+" requested", runID,
		outboxMark{Part: "run", Field: "step_sent", Value: sentMark(strconv.Itoa(step), now)})
}

// MarkDispatched records that the request each call's state (as given)
// asks for was published at now (ToolCall.DispatchedAt reads it until the
// call's state asks for another). Calls of one run only.
func (s *Store) MarkDispatched(ctx context.Context, runID string, calls []pipeline.ToolCall, now time.Time) error {
	return s.markCalls(ctx, s.scripts.markSent, runID, calls, "marked dispatched", func(c pipeline.ToolCall) string {
		return sentMark(generation(c), now)
	})
}

// ClearDispatched takes back the marks a worker wrote before publishing
// calls (as given: DispatchedAt and DispatchedBy as the commit returned
// them) that it then may not have published: those calls read as not
// sent, and the next reconcile publishes them. A call marked again since,
// or moved on, keeps its newer mark. Calls of one run only.
func (s *Store) ClearDispatched(ctx context.Context, runID string, calls []pipeline.ToolCall) error {
	return s.markCalls(ctx, s.scripts.takeBackMarks, runID, calls, "unmarked", func(c pipeline.ToolCall) string {
		return beingSentMark(generation(c), c.DispatchedAt, c.DispatchedBy)
	})
}

// outboxMark is a mark mark_sent writes, or take_back_marks takes back:
// field of the run's hash Part names ("run", "call:<id>"), value.
type outboxMark struct {
	Part  string `json:"part"`
	Field string `json:"field"`
	Value string `json:"value"`
}

// markCalls runs sc (mark_sent or take_back_marks) on the outbox mark
// "sent" of each of calls (of one run) with value(call), in one script.
func (s *Store) markCalls(ctx context.Context, sc *redis.Script, runID string, calls []pipeline.ToolCall, done string, value func(pipeline.ToolCall) string) error {
	if len(calls) == 0 {
		return nil
	}
	marks := make([]outboxMark, len(calls))
	for i, c := range calls {
		marks[i] = outboxMark{Part: "call:" + c.ID, Field: "sent", Value: value(c)}
	}
	return s.mark(ctx, sc, strconv.Itoa(len(calls))+" calls of run "+runID+" "+done, runID, marks...)
}

// mark runs sc (mark_sent or take_back_marks) on marks of the run.
func (s *Store) mark(ctx context.Context, sc *redis.Script, what, runID string, marks ...outboxMark) error {
	_, err := s.call(ctx, sc, what, []string{s.runKey(runID)}, markArg(marks))
	return err
}

// markArg is mark_sent's and take_back_marks's argument.
func markArg(marks []outboxMark) any {
	return struct {
		Marks []outboxMark `json:"marks"`
	}{marks}
}

// ReleaseStepLease gives up owner's lease on step `step` of the run at
// once (a worker that stops before finishing the inference): the lease
// reads as expired, so the next reconcile re-requests the step instead of
// waiting for it to run out. ErrLeaseLost when owner no longer holds it.
func (s *Store) ReleaseStepLease(ctx context.Context, runID string, step int, owner string) error {
	return s.RenewStepLease(ctx, runID, step, Lease{Owner: owner})
}

// ReleaseCallLease is ReleaseStepLease for a running call.
func (s *Store) ReleaseCallLease(ctx context.Context, runID, callID, owner string) error {
	return s.RenewCallLease(ctx, runID, callID, Lease{Owner: owner})
}
