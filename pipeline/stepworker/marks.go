package stepworker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// The calls a commit dispatches are marked as being sent in the commit
// itself, by this worker's instance, instead of being marked once their
// publish is done: a round trip a step fewer. Another reconcile trusts such
// a mark only while the worker that wrote it is alive (its sweeper's
// heartbeat is younger than aliveTTL): a live worker publishes what it
// marked, or takes the marks back when it could not; a worker that died
// may have died before publishing, so its marks count as unsent, and the
// calls are published again (a duplicate claim is a no-op).

// newInstance names this worker's run of the process, for its marks and
// heartbeats: random, without "@".
func newInstance() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// aliveTTL is how long after a worker's last heartbeat its marks are
// trusted: five sweep intervals.
func (w *Worker) aliveTTL() time.Duration { return 5 * w.settings.SweepInterval.Duration }

// heartbeat records this worker alive at now and learns which others are.
func (w *Worker) heartbeat(ctx context.Context, now time.Time) {
	live, err := w.store.Heartbeat(ctx, w.instance, now, w.aliveTTL())
	if err != nil {
		w.log.Warn("heartbeat; the last look at which workers are alive stands", "error", err)
		return
	}
	w.live.Store(&live)
}

// alive reports whether instance was alive at the last heartbeat (this
// worker always is).
func (w *Worker) alive(instance string) bool {
	if instance == w.instance {
		return true
	}
	live := w.live.Load()
	return live != nil && (*live)[instance]
}

// dispatched reports whether a call's request counts as published: marked
// sent less than dispatch_timeout ago, and, for a mark written before its
// publish, by a worker still alive.
func (w *Worker) dispatched(c pipeline.ToolCall, now time.Time) bool {
	if c.DispatchedBy != "" && !w.alive(c.DispatchedBy) {
		return false
	}
	return sentWithin(c.DispatchedAt, now, w.settings.DispatchTimeout.Duration)
}

// markOutgoing marks the calls of a commit that its reconcile will publish
// (dispatchable by agent, the agent that holds the run after the commit) as
// being sent by this worker.
func (w *Worker) markOutgoing(agent config.Agent, calls []pipeline.ToolCall) {
	for _, i := range dispatchable(agent, calls) {
		calls[i].DispatchedBy = w.instance
	}
}

// outgoing returns the calls this worker marked as being sent.
func (w *Worker) outgoing(calls []pipeline.ToolCall) []pipeline.ToolCall {
	var out []pipeline.ToolCall
	for _, c := range calls {
		if c.DispatchedBy == w.instance {
			out = append(out, c)
		}
	}
	return out
}

// unsent holds the marks this worker must take back (calls it marked but
// may not have published), by run, until Redis has taken them: the sweeper
// retries them, since other workers trust them while this one is alive.
type unsent struct {
	mu    sync.Mutex
	calls map[string][]pipeline.ToolCall
}

func (u *unsent) add(runID string, calls []pipeline.ToolCall) {
	if len(calls) == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.calls == nil {
		u.calls = map[string][]pipeline.ToolCall{}
	}
	u.calls[runID] = append(u.calls[runID], calls...)
}

// clear takes the marks back, keeping those Redis did not take.
func (u *unsent) clear(ctx context.Context, st *store.Store, log *slog.Logger) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for runID, calls := range u.calls {
		if err := st.ClearDispatched(ctx, runID, calls); err != nil {
			log.Warn("take back the marks of calls not published; the sweeper retries", "run_id", runID, "error", err)
			continue
		}
		delete(u.calls, runID)
	}
}
