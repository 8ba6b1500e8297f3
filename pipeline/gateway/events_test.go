package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// sseEvent is one event as a client reads it off the wire.
type sseEvent struct {
	id, typ, data string
}

// sseStream is an open GET /v1/runs/{id}/events, read in the background.
type sseStream struct {
	events   chan sseEvent
	comments chan string
	cancel   context.CancelFunc
}

// openEvents opens the run's event stream with the given header pairs and
// wants a 200 text/event-stream answer.
func (h *harness) openEvents(t *testing.T, path string, header ...string) *sseStream {
	t.Helper()
	return h.openSSE(t, http.MethodGet, path, nil, header...)
}

// openSSE sends a request for an event stream (a JSON body, when not nil,
// and the given header pairs) and wants a 200 text/event-stream answer.
func (h *harness) openSSE(t *testing.T, method, path string, body any, header ...string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if res.StatusCode != http.StatusOK {
		refusal, _ := io.ReadAll(res.Body)
		t.Fatalf("%s %s: status %d %s", method, path, res.StatusCode, refusal)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("%s %s: Content-Type %q, want text/event-stream", method, path, ct)
	}
	s := &sseStream{events: make(chan sseEvent, 100), comments: make(chan string, 100), cancel: cancel}
	go func() {
		defer close(s.events)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.data != "" {
					s.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				select {
				case s.comments <- line:
				default:
				}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			case strings.HasPrefix(line, "retry: "):
			default:
				t.Errorf("unexpected SSE line %q", line)
			}
		}
	}()
	return s
}

// next returns the next event, failing after 5 s or when the stream ended.
func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatalf("the stream ended, want another event")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatalf("no event within 5s")
	}
	return sseEvent{}
}

// take returns the next n events.
func (s *sseStream) take(t *testing.T, n int) []sseEvent {
	t.Helper()
	out := make([]sseEvent, 0, n)
	for range n {
		out = append(out, s.next(t))
	}
	return out
}

// wantEnd fails unless the server ends the stream, with no more events,
// within 5 s.
func (s *sseStream) wantEnd(t *testing.T) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			t.Fatalf("got event %s %s, want the stream to end", ev.id, ev.typ)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the stream did not end within 5s")
	}
}

// logIDs returns the ids and types of the run's whole event log.
func (h *harness) logIDs(t *testing.T, runID string) []sseEvent {
	t.Helper()
	events, err := h.store.Events(context.Background(), runID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]sseEvent, len(events))
	for i, ev := range events {
		out[i] = sseEvent{id: ev.ID, typ: string(ev.Type)}
	}
	return out
}

// sameEvents fails unless got and want name the same events in order, and
// each event's data is its JSON with the same id, type and run.
func sameEvents(t *testing.T, runID string, got, want []sseEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range got {
		if got[i].id != want[i].id || got[i].typ != want[i].typ {
			t.Errorf("event %d is %s %s, want %s %s", i, got[i].id, got[i].typ, want[i].id, want[i].typ)
		}
		var ev pipeline.Event
		if err := json.Unmarshal([]byte(got[i].data), &ev); err != nil {
			t.Errorf("event %d data %q: %v", i, got[i].data, err)
			continue
		}
		if ev.ID != got[i].id || string(ev.Type) != got[i].typ || ev.RunID != runID {
			t.Errorf("event %d data %s does not match id %s, type %s, run %s", i, got[i].data, got[i].id, got[i].typ, runID)
		}
	}
}

// stepThrough drives a run through step 0 with one tool call: claim, commit.
func (h *harness) stepThrough(t *testing.T, runID string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	if _, err := h.store.ClaimStep(ctx, runID, 0, store.Lease{Owner: "w1", Until: now.Add(time.Minute)}, now); err != nil {
		t.Fatalf("ClaimStep: %v", err)
	}
	args := json.RawMessage(`{"q":1}`)
	commit := store.StepCommit{
		Assistant: pipeline.Message{Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCallRequest{{ID: "c-1", Name: "echo", Arguments: args}}},
		Calls:     []pipeline.ToolCall{{ID: "c-1", RunID: runID, Tool: "echo", Queue: "default", Status: pipeline.CallNew, Arguments: args}},
	}
	if _, _, err := h.store.CommitStep(ctx, runID, 0, "w1", commit, now); err != nil {
		t.Fatalf("CommitStep: %v", err)
	}
}

func (h *harness) finish(t *testing.T, runID string) {
	t.Helper()
	if _, err := h.store.FinishRun(context.Background(), runID, pipeline.Termination{Reason: pipeline.ReasonCancelled}, time.Now()); err != nil {
		t.Fatalf("FinishRun: %v", err)
	}
}

func TestEvents_stream_the_backlog_then_live_events_and_end_after_run_finished(t *testing.T) {
	h := newHarness(t)
	id := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	ctx := context.Background()
	now := time.Now()
	if _, err := h.store.ClaimStep(ctx, id, 0, store.Lease{Owner: "w1", Until: now.Add(time.Minute)}, now); err != nil {
		t.Fatalf("ClaimStep: %v", err)
	}
	backlog := h.logIDs(t, id)
	if len(backlog) < 2 || backlog[0].typ != string(pipeline.EventRunCreated) {
		t.Fatalf("log after create and claim = %v, want run.created and more", backlog)
	}

	s := h.openEvents(t, "/v1/runs/"+id+"/events")
	got := s.take(t, len(backlog))
	sameEvents(t, id, got, backlog)

	// Live: the commit's events arrive while the stream is open.
	args := json.RawMessage(`{"q":1}`)
	if _, _, err := h.store.CommitStep(ctx, id, 0, "w1", store.StepCommit{
		Assistant: pipeline.Message{Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCallRequest{{ID: "c-1", Name: "echo", Arguments: args}}},
		Calls:     []pipeline.ToolCall{{ID: "c-1", RunID: id, Tool: "echo", Queue: "default", Status: pipeline.CallNew, Arguments: args}},
	}, now); err != nil {
		t.Fatalf("CommitStep: %v", err)
	}
	afterCommit := h.logIDs(t, id)
	got = append(got, s.take(t, len(afterCommit)-len(got))...)
	sameEvents(t, id, got, afterCommit)

	h.finish(t, id)
	all := h.logIDs(t, id)
	got = append(got, s.take(t, len(all)-len(got))...)
	sameEvents(t, id, got, all)
	if last := got[len(got)-1]; last.typ != string(pipeline.EventRunFinished) {
		t.Fatalf("last event %s, want run.finished", last.typ)
	}
	s.wantEnd(t)
}

func TestEvents_resume_after_Last_Event_ID_with_nothing_lost_or_repeated(t *testing.T) {
	h := newHarness(t)
	id := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	path := "/v1/runs/" + id + "/events"

	// A client reads the first event and goes away.
	first := h.openEvents(t, path)
	got := first.take(t, 1)
	first.cancel()

	// The run goes on without it.
	h.stepThrough(t, id)
	h.finish(t, id)
	all := h.logIDs(t, id)
	if len(all) < 4 {
		t.Fatalf("log = %v, want at least 4 events", all)
	}

	// It comes back with the last id it saw and gets exactly the rest.
	again := h.openEvents(t, path, "Last-Event-ID", got[0].id)
	got = append(got, again.take(t, len(all)-1)...)
	sameEvents(t, id, got, all)
	again.wantEnd(t)

	t.Run("the after query resumes the same way", func(t *testing.T) {
		s := h.openEvents(t, path+"?after="+all[1].id)
		sameEvents(t, id, s.take(t, len(all)-2), all[2:])
		s.wantEnd(t)
	})
	t.Run("Last-Event-ID wins over the after query", func(t *testing.T) {
		s := h.openEvents(t, path+"?after="+all[0].id, "Last-Event-ID", all[2].id)
		sameEvents(t, id, s.take(t, len(all)-3), all[3:])
		s.wantEnd(t)
	})
	t.Run("after run.finished the stream ends at once", func(t *testing.T) {
		h.openEvents(t, path, "Last-Event-ID", all[len(all)-1].id).wantEnd(t)
	})
}

func TestEvents_a_client_that_resumes_while_the_run_goes_on_misses_nothing(t *testing.T) {
	h := newHarness(t)
	id := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	path := "/v1/runs/" + id + "/events"

	s := h.openEvents(t, path)
	got := s.take(t, 1)
	s.cancel()
	// Reconnect before anything else happened, then the run moves.
	s = h.openEvents(t, path, "Last-Event-ID", got[0].id)
	h.stepThrough(t, id)
	h.finish(t, id)
	all := h.logIDs(t, id)
	got = append(got, s.take(t, len(all)-1)...)
	sameEvents(t, id, got, all)
	s.wantEnd(t)
}

func TestEvents_an_idle_stream_gets_heartbeats(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) {
		c.Heartbeat = 50 * time.Millisecond
		c.EventWait = 20 * time.Millisecond
	})
	id := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	s := h.openEvents(t, "/v1/runs/"+id+"/events")
	s.take(t, 1)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case c := <-s.comments:
			if strings.Contains(c, "heartbeat") {
				return
			}
		case <-deadline:
			t.Fatal("no heartbeat within 5s")
		}
	}
}

func TestEvents_a_malformed_Last_Event_ID_is_refused(t *testing.T) {
	h := newHarness(t)
	id := h.createRun(`{"agent": "assistant", "input": "hi"}`).RunID
	h.do(http.MethodGet, "/v1/runs/"+id+"/events", "", nil, "Last-Event-ID", "yesterday").
		wantError(t, http.StatusBadRequest, "invalid_request", `"yesterday"`)
	h.get("/v1/runs/"+id+"/events?after=1-2-3").wantError(t, http.StatusBadRequest, "invalid_request")
}
