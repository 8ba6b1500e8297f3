package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// harness is one gateway over a private Redis and an in-process pubsub.
type harness struct {
	t         *testing.T
	url       string
	store     *store.Store
	pub       *switchPublisher
	names     topics.Names
	steps     *stepRecorder
	decisions *decisionRecorder
	handler   http.Handler // what url serves, for a test's own server; checked against openapi.yaml
}

// newHarness starts a gateway; edit adjusts its config before New. Every
// request it serves, and its answer, is checked against openapi.yaml
// (contract_test.go).
func newHarness(t *testing.T, edit ...func(*gateway.Config)) *harness {
	t.Helper()
	st := store.New(testinfra.RedisClient(t))
	names := topics.NewNames("test.")
	ps := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 1024}, nil)
	t.Cleanup(func() { _ = ps.Close() })
	steps := recordSteps(t, ps, names.RunSteps())
	decisions := recordDecisions(t, ps, names.Decisions())
	pub := &switchPublisher{Publisher: ps}

	cfg := gateway.Config{
		Store:     st,
		Publisher: pub,
		Names:     names,
		Agents:    func(name string) bool { return name == "assistant" || name == "helper" },
		ValidateModel: func(raw json.RawMessage) error {
			var m struct {
				Provider string `json:"provider"`
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				return err
			}
			if m.Provider != "script" {
				return errors.New(`provider must be "script"`)
			}
			return nil
		},
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, e := range edit {
		e(&cfg)
	}
	srv, err := gateway.New(cfg)
	if err != nil {
		t.Fatalf("gateway.New: %v", err)
	}
	handler := loadContract(t).serve(t, srv.Handler())
	hs := httptest.NewServer(handler)
	t.Cleanup(hs.Close)
	return &harness{t: t, url: hs.URL, store: st, pub: pub, names: names, steps: steps, decisions: decisions, handler: handler}
}

// testWriter sends log lines to t.Log, so they show only for failing tests.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// switchPublisher publishes through Publisher, or fails while failing is
// set. It counts what it published per topic, synchronously, so a test can
// tell right after an answer that nothing was published.
type switchPublisher struct {
	message.Publisher
	failing atomic.Bool

	mu        sync.Mutex
	published map[string]int
}

func (p *switchPublisher) Publish(topic string, msgs ...*message.Message) error {
	if p.failing.Load() {
		return errors.New("broker unreachable")
	}
	if err := p.Publisher.Publish(topic, msgs...); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.published == nil {
		p.published = map[string]int{}
	}
	p.published[topic] += len(msgs)
	return nil
}

// count returns how many messages were published to topic.
func (p *switchPublisher) count(topic string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.published[topic]
}

// recorder keeps every message of one kind published to a topic, checking
// that each is well formed and keyed by its run.
type recorder[M topics.Message] struct {
	mu    sync.Mutex
	msgs  []M
	runOf func(M) string
}

func record[M topics.Message](t *testing.T, ps *gochannel.GoChannel, topic string, runOf func(M) string) *recorder[M] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := ps.Subscribe(ctx, topic)
	if err != nil {
		t.Fatalf("subscribe %s: %v", topic, err)
	}
	r := &recorder[M]{runOf: runOf}
	go func() {
		for msg := range ch {
			m, err := topics.Decode[M](msg.Payload)
			if err != nil {
				t.Errorf("published a malformed %T: %v", m, err)
			}
			if got := msg.Metadata.Get(topics.MetadataRunID); got != runOf(m) {
				t.Errorf("message key %q, want the run id %q", got, runOf(m))
			}
			r.mu.Lock()
			r.msgs = append(r.msgs, m)
			r.mu.Unlock()
			msg.Ack()
		}
	}()
	return r
}

// of returns the messages published for runID, in order.
func (r *recorder[M]) of(runID string) []M {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []M
	for _, m := range r.msgs {
		if r.runOf(m) == runID {
			out = append(out, m)
		}
	}
	return out
}

// stepRecorder keeps every StepRequested published to run-steps.
type stepRecorder struct {
	*recorder[topics.StepRequested]
}

func recordSteps(t *testing.T, ps *gochannel.GoChannel, topic string) *stepRecorder {
	t.Helper()
	return &stepRecorder{record(t, ps, topic, func(m topics.StepRequested) string { return m.RunID })}
}

// count returns how many StepRequested{step 0} were published for runID,
// and how many for other steps (the gateway must publish none).
func (r *stepRecorder) count(runID string) (step0, other int) {
	for _, m := range r.of(runID) {
		switch {
		case m.Step == 0:
			step0++
		default:
			other++
		}
	}
	return step0, other
}

// waitCount waits until runID has want StepRequested messages, and fails if
// it gets more.
func (r *stepRecorder) waitCount(t *testing.T, runID string, want int) {
	t.Helper()
	eventually(t, func() bool { n, _ := r.count(runID); return n >= want },
		"StepRequested for %s published %d times", runID, want)
	if got, other := r.count(runID); got != want || other != 0 {
		t.Fatalf("StepRequested for %s published %d times for step 0 and %d for others, want %d and 0", runID, got, other, want)
	}
}

// decisionRecorder keeps every Decision published to the decisions topic.
type decisionRecorder struct {
	*recorder[topics.Decision]
}

func recordDecisions(t *testing.T, ps *gochannel.GoChannel, topic string) *decisionRecorder {
	t.Helper()
	return &decisionRecorder{record(t, ps, topic, func(m topics.Decision) string { return m.RunID })}
}

// waitFor waits until n decisions were published for runID and returns
// them; more than n fails the test.
func (r *decisionRecorder) waitFor(t *testing.T, runID string, n int) []topics.Decision {
	t.Helper()
	eventually(t, func() bool { return len(r.of(runID)) >= n }, "%d decisions published for %s", n, runID)
	got := r.of(runID)
	if len(got) != n {
		t.Fatalf("%d decisions published for %s, want %d: %+v", len(got), runID, n, got)
	}
	return got
}

// eventually waits up to 5 s for cond (testinfra.Eventually).
func eventually(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	testinfra.Eventually(t, 5*time.Second, cond, func() string { return fmt.Sprintf(format, args...) })
}

// response is an HTTP answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request with header's name and value pairs ("Host" sets the
// request's Host) and reads its answer.
func (h *harness) do(method, path, contentType string, body []byte, header ...string) response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1] // the client sends req.Host, not a Host header
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func (h *harness) post(path string, body any) response {
	h.t.Helper()
	b, ok := body.([]byte)
	if !ok {
		if s, isStr := body.(string); isStr {
			b = []byte(s)
		} else {
			var err error
			if b, err = json.Marshal(body); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	return h.do(http.MethodPost, path, "application/json", b)
}

func (h *harness) get(path string) response {
	h.t.Helper()
	return h.do(http.MethodGet, path, "", nil)
}

// createRun posts body to /v1/runs and wants 201.
func (h *harness) createRun(body any) gateway.CreateRunResponse {
	h.t.Helper()
	res := h.post("/v1/runs", body)
	var out gateway.CreateRunResponse
	res.want(h.t, http.StatusCreated, &out)
	return out
}

// want checks the status and decodes the body into v (if not nil).
func (r response) want(t *testing.T, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body: %s", r.status, status, r.body)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("decode %s: %v", r.body, err)
		}
	}
}

// wantError checks an error answer: status, code, JSON content type, and that
// the message and details mention every one of mentions.
func (r response) wantError(t *testing.T, status int, code string, mentions ...string) gateway.ErrorBody {
	t.Helper()
	var body gateway.ErrorBody
	r.want(t, status, &body)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if body.Error.Code != code {
		t.Errorf("error code %q, want %q; body: %s", body.Error.Code, code, r.body)
	}
	if body.Error.Message == "" {
		t.Errorf("error message is empty")
	}
	for _, m := range mentions {
		if !strings.Contains(body.Error.Message, m) {
			t.Errorf("error message does not mention %q: %s", m, body.Error.Message)
		}
	}
	return body
}
