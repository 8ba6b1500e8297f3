package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// eventPage is how many events one backlog read fetches.
const eventPage = 500

// eventIDPattern is a Redis stream id ("ms-seq", or "ms").
var eventIDPattern = regexp.MustCompile(`^[0-9]+(-[0-9]+)?$`)

// streamEvents serves GET /v1/runs/{id}/events: the run's event log as
// Server-Sent Events, one SSE event per log entry (id = the entry's id,
// event = its type, data = its JSON). A Last-Event-ID header, or else an
// ?after= query, resumes strictly after that id. The stream ends after
// run.finished of a done run (not after one whose reason is suspended: the
// run waits and will go on), or when the client goes away; an idle
// stream gets a comment line every Heartbeat.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	if after != "" && !eventIDPattern.MatchString(after) {
		writeError(w, invalid("event id %q is not a stream id like 1700000000000-0", after))
		return
	}
	ctx := r.Context()
	run, err := s.cfg.Store.GetRun(ctx, id)
	if err != nil {
		s.fail(w, r, "run "+id, err)
		return
	}
	if !s.visible(w, r, id, run.Tenant) {
		return
	}
	release, ok := s.streams.acquire(streamOwner(r))
	if !ok {
		w.Header().Set("Retry-After", "5")
		writeError(w, apiErr(http.StatusTooManyRequests, CodeTooManyRequests,
			fmt.Sprintf("%d event streams are open for this key already (gateway.max_streams_per_key); close one first", s.cfg.MaxStreamsPerKey)))
		return
	}
	defer release()

	rc := http.NewResponseController(w)
	// Each write gets its own deadline (eventStream.deadline), in place of
	// the server's write timeout, which would cut every long stream.
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, "retry: 1000\n\n"); err != nil {
		return
	}
	if err := rc.Flush(); err != nil {
		s.log.WarnContext(ctx, "sse: flush not supported", "run_id", id, "err", err)
		return
	}

	es := eventStream{w: w, rc: rc, after: after, lastWrite: time.Now(), timeout: s.cfg.StreamWriteTimeout}
	// The backlog, page by page.
	for {
		events, err := s.cfg.Store.Events(ctx, id, es.after, eventPage)
		if err != nil {
			s.streamFailed(ctx, id, err)
			return
		}
		done, err := es.send(events)
		if done || err != nil {
			return
		}
		if len(events) < eventPage {
			break
		}
	}
	// A finished run whose run.finished lies at or before the resume point
	// has nothing more to say.
	if run.Status.Final() {
		return
	}
	// Follow, one blocking read at a time.
	wait := min(s.cfg.EventWait, s.cfg.Heartbeat)
	for {
		events, err := s.cfg.Store.WaitEvents(ctx, id, es.after, wait)
		if err != nil {
			s.streamFailed(ctx, id, err)
			return
		}
		done, err := es.send(events)
		if done || err != nil {
			return
		}
		if len(events) == 0 && time.Since(es.lastWrite) >= s.cfg.Heartbeat {
			if err := es.heartbeat(); err != nil {
				return
			}
		}
	}
}

// streamFailed logs why a stream ended early, unless the client left.
func (s *Server) streamFailed(ctx context.Context, runID string, err error) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return
	}
	s.log.WarnContext(ctx, "sse: reading the event log failed; the stream ends and the client may resume", "run_id", runID, "err", err)
}

// eventStream writes events and remembers the last id written.
type eventStream struct {
	w         io.Writer
	rc        *http.ResponseController
	after     string
	lastWrite time.Time
	timeout   time.Duration // of each write: a client that stops reading is dropped
}

// deadline gives the next write its time. A writer without deadlines (a
// test's recorder) has no need of one.
func (e *eventStream) deadline() {
	_ = e.rc.SetWriteDeadline(time.Now().Add(e.timeout))
}

// send writes events and flushes. done is true once run.finished is sent.
func (e *eventStream) send(events []pipeline.Event) (done bool, err error) {
	if len(events) == 0 {
		return false, nil
	}
	e.deadline()
	for _, ev := range events {
		data, err := json.Marshal(ev)
		if err != nil {
			return false, fmt.Errorf("encode event %s: %w", ev.ID, err)
		}
		if _, err := fmt.Fprintf(e.w, "id: %s\nevent: %s\ndata: %s\n\n", ev.ID, ev.Type, data); err != nil {
			return false, err
		}
		e.after = ev.ID
		if ends(ev) {
			done = true
			break
		}
	}
	e.lastWrite = time.Now()
	return done, e.rc.Flush()
}

// heartbeat writes an SSE comment line, which clients ignore.
func (e *eventStream) heartbeat() error {
	e.deadline()
	if _, err := io.WriteString(e.w, ": heartbeat\n\n"); err != nil {
		return err
	}
	e.lastWrite = time.Now()
	return e.rc.Flush()
}

// ends reports whether ev is the last event of a run: run.finished, unless
// it reports a suspension (reason suspended), after which the run goes on
// once decisions arrive.
func ends(ev pipeline.Event) bool {
	if ev.Type != pipeline.EventRunFinished {
		return false
	}
	var t pipeline.Termination
	_ = json.Unmarshal(ev.Data, &t)
	return t.Reason != pipeline.ReasonSuspended
}
