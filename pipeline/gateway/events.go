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
	release, ok := s.acquireStream(w, r)
	if !ok {
		return
	}
	defer release()

	rc, ok := s.startSSE(w, r, id)
	if !ok {
		return
	}
	if _, err := io.WriteString(w, "retry: 1000\n\n"); err != nil {
		return
	}
	es := eventStream{w: w, rc: rc, lastWrite: time.Now(), timeout: s.cfg.StreamWriteTimeout}
	err = s.tail(ctx, id, after, run.Status.Final(), es.send, func() error {
		if time.Since(es.lastWrite) < s.cfg.Heartbeat {
			return nil
		}
		return es.heartbeat()
	})
	s.streamFailed(ctx, id, err)
}

// tail feeds send the run's events strictly after `after`: the backlog,
// page by page, then (unless the run was final when the caller read it:
// its log is complete) new events as they arrive, one blocking read at a
// time, calling idle after each read that brought nothing. It stops when
// send reports done, or at the first error (the client's going away
// included).
func (s *Server) tail(ctx context.Context, runID, after string, final bool,
	send func([]pipeline.Event) (done bool, err error), idle func() error) error {
	for {
		events, err := s.cfg.Store.Events(ctx, runID, after, eventPage)
		if err != nil {
			return err
		}
		if done, err := send(events); done || err != nil {
			return err
		}
		if len(events) > 0 {
			after = events[len(events)-1].ID
		}
		if len(events) < eventPage {
			break
		}
	}
	if final {
		return nil
	}
	wait := min(s.cfg.EventWait, s.cfg.Heartbeat)
	for {
		events, err := s.cfg.Store.WaitEvents(ctx, runID, after, wait)
		if err != nil {
			return err
		}
		if done, err := send(events); done || err != nil {
			return err
		}
		if len(events) == 0 {
			if err := idle(); err != nil {
				return err
			}
			continue
		}
		after = events[len(events)-1].ID
	}
}

// acquireStream takes one of the stream slots of r's key, or answers 429.
func (s *Server) acquireStream(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	release, ok = s.streams.acquire(streamOwner(r))
	if !ok {
		w.Header().Set("Retry-After", "5")
		writeError(w, apiErr(http.StatusTooManyRequests, CodeTooManyRequests,
			fmt.Sprintf("%d event streams are open for this key already (gateway.max_streams_per_key); close one first", s.cfg.MaxStreamsPerKey)))
	}
	return release, ok
}

// startSSE answers 200 with the headers of an event stream and flushes
// them. Each write of the stream gets its own deadline (eventStream.deadline)
// in place of the server's write timeout, which would cut every long
// stream.
func (s *Server) startSSE(w http.ResponseWriter, r *http.Request, runID string) (*http.ResponseController, bool) {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		s.log.WarnContext(r.Context(), "sse: flush not supported", "run_id", runID, "err", err)
		return nil, false
	}
	return rc, true
}

// streamFailed logs why a stream ended early, unless the client left.
func (s *Server) streamFailed(ctx context.Context, runID string, err error) {
	if err == nil || ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return
	}
	s.log.WarnContext(ctx, "sse: reading the event log failed; the stream ends and the client may resume", "run_id", runID, "err", err)
}

// eventStream writes a stream's entries, each write under its own
// deadline.
type eventStream struct {
	w         io.Writer
	rc        *http.ResponseController
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
		if ends(ev) {
			done = true
			break
		}
	}
	e.lastWrite = time.Now()
	return done, e.rc.Flush()
}

// data writes v as one SSE data line, JSON, unflushed.
func (e *eventStream) data(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %T: %w", v, err)
	}
	e.deadline()
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", b); err != nil {
		return err
	}
	e.lastWrite = time.Now()
	return nil
}

// flush sends what was written.
func (e *eventStream) flush() error { return e.rc.Flush() }

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
