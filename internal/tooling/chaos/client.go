package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// requestTimeout bounds one HTTP request to the gateway (an event stream
// of a run that is not done is cut after streamTimeout instead).
const (
	requestTimeout = 10 * time.Second
	streamTimeout  = 2 * time.Second
)

// gateway is a client of the gateway's HTTP API: the public contract, so
// that what the oracle reads is what any client reads. Safe for concurrent
// use.
type gateway struct {
	base string
	http *http.Client
}

func newGateway(base string) *gateway {
	return &gateway{base: base, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

// runView is what the oracle reads of GET /v1/runs/{id}.
type runView struct {
	RunID       string       `json:"run_id"`
	Status      string       `json:"status"`
	Step        int          `json:"step"`
	Termination *termination `json:"termination,omitempty"`
	Usage       struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
	ToolCalls []callView  `json:"tool_calls"`
	Children  []childView `json:"children,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
}

// childView is one of a run's children in GET /v1/runs/{id}.
type childView struct {
	RunID  string `json:"run_id"`
	CallID string `json:"call_id"`
	Status string `json:"status"`
}

type termination struct {
	Reason string `json:"reason"`
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`
}

func (t *termination) String() string {
	if t == nil {
		return "none"
	}
	s := t.Reason
	if t.Code != "" {
		s += "/" + t.Code
	}
	if t.Detail != "" {
		s += ": " + t.Detail
	}
	return s
}

type callView struct {
	CallID    string          `json:"call_id"`
	Step      int             `json:"step"`
	Tool      string          `json:"tool"`
	Status    string          `json:"status"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	Gate      string          `json:"gate,omitempty"`
}

// event is one entry of a run's event log, as GET /v1/runs/{id}/events
// sends it.
type event struct {
	ID     string          `json:"id"`
	Type   string          `json:"type"`
	Step   int             `json:"step"`
	CallID string          `json:"call_id,omitempty"`
	At     time.Time       `json:"at"` // when the worker that logged it committed it
	Data   json.RawMessage `json:"data,omitempty"`
}

// apiError is an answer outside 2xx.
type apiError struct {
	status int
	body   string
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

// notFound reports whether err is the gateway's 404.
func notFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == http.StatusNotFound
}

func (g *gateway) do(ctx context.Context, method, path string, body any, into any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := g.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode >= 300 {
		return &apiError{status: res.StatusCode, body: strings.TrimSpace(string(b))}
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			return fmt.Errorf("%s %s: decode %.200s: %w", method, path, b, err)
		}
	}
	return nil
}

// ready reports whether GET /readyz answers 200.
func (g *gateway) ready(ctx context.Context) error {
	return g.do(ctx, http.MethodGet, "/readyz", nil, nil)
}

// createBatch sends one POST /v1/runs/batch. Sending the same batch again
// is safe: a run id that exists with the same body is an idempotent replay.
func (g *gateway) createBatch(ctx context.Context, items []createRequest) error {
	return g.do(ctx, http.MethodPost, "/v1/runs/batch", items, nil)
}

func (g *gateway) run(ctx context.Context, id string) (runView, error) {
	var v runView
	err := g.do(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id), nil, &v)
	return v, err
}

// fork sends POST /v1/runs/{id}/fork: the run forkID, with id's history up
// to step. Sending it again is an idempotent replay.
func (g *gateway) fork(ctx context.Context, id string, step int, forkID string) error {
	body := map[string]any{"from_step": step, "run_id": forkID}
	return g.do(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+"/fork", body, nil)
}

// runSummary is what the oracle reads of an item of GET /v1/runs.
type runSummary struct {
	RunID      string    `json:"run_id"`
	ScheduleID string    `json:"schedule_id"`
	TickAt     time.Time `json:"tick_at"`
}

// runsSince lists every run created at since or later, all pages.
func (g *gateway) runsSince(ctx context.Context, since time.Time) ([]runSummary, error) {
	var out []runSummary
	cursor := ""
	for {
		q := url.Values{"since": {since.UTC().Format(time.RFC3339Nano)}, "limit": {"500"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Runs       []runSummary `json:"runs"`
			NextCursor string       `json:"next_cursor"`
		}
		if err := g.do(ctx, http.MethodGet, "/v1/runs?"+q.Encode(), nil, &page); err != nil {
			return out, err
		}
		out = append(out, page.Runs...)
		if page.NextCursor == "" {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

// scheduleView is what the harness reads of a schedule.
type scheduleView struct {
	ScheduleID string    `json:"schedule_id"`
	NextTick   time.Time `json:"next_tick"`
}

// createSchedule sends POST /v1/schedules with body; sending it again is
// an idempotent replay or a conflict, which the caller reads back.
func (g *gateway) createSchedule(ctx context.Context, body any) (scheduleView, error) {
	var v scheduleView
	err := g.do(ctx, http.MethodPost, "/v1/schedules", body, &v)
	return v, err
}

func (g *gateway) schedule(ctx context.Context, id string) (scheduleView, error) {
	var v scheduleView
	err := g.do(ctx, http.MethodGet, "/v1/schedules/"+url.PathEscape(id), nil, &v)
	return v, err
}

// pauseSchedule sends POST /v1/schedules/{id}/pause: no tick is claimed
// after it, and a tick claimed before still gets its run.
func (g *gateway) pauseSchedule(ctx context.Context, id string) error {
	return g.do(ctx, http.MethodPost, "/v1/schedules/"+url.PathEscape(id)+"/pause", nil, nil)
}

func (g *gateway) deleteSchedule(ctx context.Context, id string) error {
	err := g.do(ctx, http.MethodDelete, "/v1/schedules/"+url.PathEscape(id), nil, nil)
	if notFound(err) {
		return nil
	}
	return err
}

// messages returns the run's conversation as the raw "messages" array.
func (g *gateway) messages(ctx context.Context, id string) (json.RawMessage, error) {
	var v struct {
		Messages json.RawMessage `json:"messages"`
	}
	err := g.do(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id)+"/messages", nil, &v)
	return v.Messages, err
}

// events reads the run's whole event log. The stream of a done run ends
// after run.finished; events logged after it (a late decision's rejection,
// or a second commit that should not exist) are read with ?after= until a
// read brings nothing new. The stream of a run that is not done stays open:
// it is cut after streamTimeout, and complete is false.
func (g *gateway) events(ctx context.Context, id string) (evs []event, complete bool, err error) {
	after := ""
	for {
		page, closed, err := g.eventStream(ctx, id, after)
		if err != nil {
			return evs, false, err
		}
		evs = append(evs, page...)
		if !closed {
			return evs, false, nil
		}
		if len(page) == 0 {
			return evs, true, nil
		}
		after = page[len(page)-1].ID
	}
}

// eventStream reads one SSE stream; closed is false when it was cut.
func (g *gateway) eventStream(ctx context.Context, id, after string) (evs []event, closed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, streamTimeout)
	defer cancel()
	path := "/v1/runs/" + url.PathEscape(id) + "/events"
	if after != "" {
		path += "?after=" + url.QueryEscape(after)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.base+path, nil)
	if err != nil {
		return nil, false, err
	}
	res, err := g.http.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return nil, false, &apiError{status: res.StatusCode, body: strings.TrimSpace(string(b))}
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return evs, false, fmt.Errorf("events of %s: decode %.200s: %w", id, data, err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return evs, false, nil // cut: the run is not done
		}
		return evs, false, err
	}
	return evs, true, nil
}

// retry calls f until it succeeds, ctx ends or within has passed, pausing
// pause between tries; it returns f's last error.
func retry(ctx context.Context, within, pause time.Duration, f func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}
