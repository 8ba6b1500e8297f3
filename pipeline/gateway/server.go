package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/contracts"
	"github.com/stepwise-run/stepwise/pipeline/console"
	"github.com/stepwise-run/stepwise/pipeline/metrics"
	"github.com/stepwise-run/stepwise/pipeline/scheduler"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/versions"
	"github.com/stepwise-run/stepwise/topics"
)

// Defaults of Config.
const (
	DefaultSweepAfter         = 5 * time.Minute
	DefaultMaxBodyBytes       = 10 << 20  // 10 MiB
	DefaultMaxDecisionBytes   = 512 << 10 // 512 KiB
	DefaultMaxBatchItems      = 10000
	DefaultBatchConcurrency   = 32
	DefaultEventWait          = 1500 * time.Millisecond
	DefaultHeartbeat          = 15 * time.Second
	DefaultReadyTimeout       = 2 * time.Second
	DefaultMaxStreamsPerKey   = 64
	DefaultStreamWriteTimeout = time.Minute
)

// Config is what a Server needs. Store and Publisher are required; every
// other field has a default (see setDefaults).
type Config struct {
	// Store holds every run's truth. Required.
	Store *store.Store
	// Publisher sends StepRequested to Names.RunSteps() and decisions and
	// cancels to Names.Decisions(). Required. It is
	// called from many request goroutines at once and must be safe for that
	// (watermill publishers are).
	Publisher message.Publisher
	// Names builds topic names. The zero value uses no prefix; pass
	// topics.NewNames("") for the default "stepwise." prefix.
	Names topics.Names
	// Agents reports whether an agent of that name exists in the
	// configuration. Required: a gateway that accepts any agent would create
	// runs no worker can drive.
	Agents func(name string) bool
	// BatchAgents are the agents whose model has a batch mode (ADR 0071):
	// only their runs may ask for batch inference, and a chat turn or a
	// person's decision makes theirs infer live (ADR 0072). Nil: none.
	BatchAgents []string
	// ClientTools reports whether the client executes a tool (a frontend
	// executor): the AI SDK stream leaves its parked calls to the client's
	// addToolOutput instead of asking to approve them, marks the other
	// tools provider-executed, and takes the client's output of such a call
	// as the decision that resumes it. Nil: the client executes none.
	ClientTools func(name string) bool
	// Versions pins each run it creates (and each a schedule it triggers
	// starts) to the version of its agent in the gateway's configuration
	// (run.agent_version; package versions), and GET /v1/agents lists
	// them. Nil pins none: such runs follow the workers' configuration.
	Versions *versions.Catalog
	// ValidateModel checks a run's own script model (the "model" field of
	// POST /v1/runs). Nil accepts any JSON object.
	ValidateModel func(raw json.RawMessage) error
	// Ready is an extra readiness check for GET /readyz (Kafka, say), run
	// after the store's Ping. Nil checks nothing more.
	Ready func(ctx context.Context) error
	// SweepAfter is when the sweeper first looks at a new run, counted from
	// its creation. Default DefaultSweepAfter (5m).
	SweepAfter time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives one debug line per request and the detail of internal
	// errors. Default slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes caps a request body, a batch's included. Default
	// DefaultMaxBodyBytes (10 MiB); a larger body is refused with 413.
	MaxBodyBytes int64
	// MaxDecisionBytes caps the body of POST /v1/runs/{id}/decisions and
	// /cancel. Default DefaultMaxDecisionBytes (512 KiB), well under Kafka's
	// default message size limit (1 MB), so a decision the gateway accepts
	// is one the broker takes; a larger body is refused with 413.
	MaxDecisionBytes int64
	// MaxBatchItems caps the items of POST /v1/runs/batch. Default
	// DefaultMaxBatchItems (10000); more are refused with 413.
	MaxBatchItems int
	// BatchConcurrency bounds the goroutines that create and publish the
	// runs of one batch. Default DefaultBatchConcurrency (32).
	BatchConcurrency int
	// EventWait is how long one read of the event stream blocks in Redis
	// while an SSE client follows a run. Default DefaultEventWait (1.5s).
	EventWait time.Duration
	// Heartbeat is how often an idle SSE stream gets a comment line, so
	// proxies keep it open. Default DefaultHeartbeat (15s).
	Heartbeat time.Duration
	// ReadyTimeout bounds the checks of GET /readyz. Default
	// DefaultReadyTimeout (2s).
	ReadyTimeout time.Duration
	// Keys are the API keys the gateway takes. None: every request is
	// served, as the admin of the default tenant (keep such a gateway on
	// loopback). Some: every route but /healthz and /readyz needs one.
	Keys []Key
	// AllowedHosts are host names (or addresses), beyond localhost,
	// *.localhost and IP addresses, that a gateway without Keys answers
	// to; a request with another Host is refused with 403 (hosts.go). With
	// Keys it is not used.
	AllowedHosts []string
	// CORSOrigins are the browser origins allowed to call the API ("*":
	// any). None: no CORS answer, and a state-changing request a page of
	// another origin sends is refused with 403.
	CORSOrigins []string
	// StreamWriteTimeout bounds each write of an event stream, renewed for
	// every one (the server's own write timeout would cut a long stream):
	// a client that stops reading is dropped. Default
	// DefaultStreamWriteTimeout (60s).
	StreamWriteTimeout time.Duration
	// Metrics, when set, counts the requests and is served at GET /metrics
	// (the admin scope, when keys are configured). Nil: /metrics is 404.
	Metrics *metrics.Set
	// Signer, when set, signs every decision and cancel the gateway
	// publishes (topics.Sign), as decisions.require_signature asks.
	Signer *Signer
	// DeadLetters, when set, reads the dead-letter topic for
	// GET /v1/dead-letters (admin). Nil: that route is 404.
	DeadLetters DeadLetterLister
	// RunRequests is how runs requested on Kafka are admitted and whose
	// they are (HandleRunRequest); its zero value has the defaults.
	RunRequests RunRequests
	// InferenceModels are the keys (config.Model.Key) of the configuration's
	// models in batch mode, sorted: GET /v1/inference-jobs lists their
	// open batches and jobs. None: it lists none.
	InferenceModels []string
	// MaxStreamsPerKey caps the event streams one key (with no keys, one
	// client IP) holds open on this gateway. Default
	// DefaultMaxStreamsPerKey (64); one more is answered 429.
	MaxStreamsPerKey int
}

func (c *Config) setDefaults() {
	if c.ClientTools == nil {
		c.ClientTools = func(string) bool { return false }
	}
	if c.SweepAfter == 0 {
		c.SweepAfter = DefaultSweepAfter
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxDecisionBytes == 0 {
		c.MaxDecisionBytes = DefaultMaxDecisionBytes
	}
	if c.MaxBatchItems == 0 {
		c.MaxBatchItems = DefaultMaxBatchItems
	}
	c.RunRequests.setDefaults()
	if c.BatchConcurrency == 0 {
		c.BatchConcurrency = DefaultBatchConcurrency
	}
	if c.EventWait == 0 {
		c.EventWait = DefaultEventWait
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	if c.MaxStreamsPerKey == 0 {
		c.MaxStreamsPerKey = DefaultMaxStreamsPerKey
	}
	if c.StreamWriteTimeout == 0 {
		c.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("gateway: Store is missing"))
	}
	if c.Publisher == nil {
		errs = append(errs, errors.New("gateway: Publisher is missing"))
	}
	if c.Agents == nil {
		errs = append(errs, errors.New("gateway: Agents is missing"))
	}
	positive := []struct {
		name string
		v    int64
	}{
		{"SweepAfter", int64(c.SweepAfter)},
		{"MaxBodyBytes", c.MaxBodyBytes},
		{"MaxDecisionBytes", c.MaxDecisionBytes},
		{"MaxBatchItems", int64(c.MaxBatchItems)},
		{"BatchConcurrency", int64(c.BatchConcurrency)},
		{"EventWait", int64(c.EventWait)},
		{"Heartbeat", int64(c.Heartbeat)},
		{"ReadyTimeout", int64(c.ReadyTimeout)},
		{"MaxStreamsPerKey", int64(c.MaxStreamsPerKey)},
		{"StreamWriteTimeout", int64(c.StreamWriteTimeout)},
	}
	for _, p := range positive {
		if p.v < 0 {
			errs = append(errs, fmt.Errorf("gateway: %s is %d, want > 0", p.name, p.v))
		}
	}
	return errors.Join(errs...)
}

// Server is the HTTP API of stepwise over one store and one publisher. It
// holds no per-run state: any number of gateways may serve the same Redis.
// Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	keys    keyring
	origins origins
	hosts   hosts
	streams *streamCounter
	openapi []byte // GET /v1/openapi.json
	// schedules fires a schedule now (POST /v1/schedules/{id}/trigger).
	schedules *scheduler.Firer
}

// New checks cfg, fills its defaults and returns a Server.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	keys, err := newKeyring(cfg.Keys)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, keys: keys, origins: newOrigins(cfg.CORSOrigins), hosts: newHosts(cfg.AllowedHosts),
		streams: newStreamCounter(cfg.MaxStreamsPerKey), schedules: &scheduler.Firer{Store: cfg.Store, Now: cfg.Now, Log: cfg.Logger, Versions: cfg.Versions}}
	if s.openapi, err = contracts.OpenAPIJSON(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	s.mux = http.NewServeMux()
	s.routes()
	return s, nil
}

// route is one pattern of the mux and what serves it.
type route struct {
	pattern string
	handler http.Handler
}

// table lists every route the gateway serves; GET /v1/openapi.json
// describes each of them (contracts/openapi.yaml).
func (s *Server) table() []route {
	return []route{
		{"POST /v1/runs", need(ScopeRunsWrite, s.createRun)},
		{"POST /v1/runs/batch", need(ScopeRunsWrite, s.createBatch)},
		{"POST /v1/runs/rerun", need(ScopeRunsWrite, s.rerunRuns)},
		{"POST /v1/runs/{id}/fork", need(ScopeRunsWrite, s.forkRun)},
		{"GET /v1/runs", need(ScopeRunsRead, s.listRuns)},
		{"GET /v1/runs/{id}", need(ScopeRunsRead, s.getRun)},
		{"GET /v1/export/runs", need(ScopeAdmin, s.exportRuns)},
		{"GET /v1/runs/{id}/messages", need(ScopeRunsRead, s.getMessages)},
		{"GET /v1/runs/{id}/events", need(ScopeRunsRead, s.streamEvents)},
		{"POST /v1/runs/{id}/decisions", need(ScopeDecisionsWrite, s.postDecision)},
		{"POST /v1/runs/{id}/cancel", need(ScopeRunsWrite, s.cancelRun)},
		{"GET /v1/pending", need(ScopeRunsRead, s.listPending)},
		{"POST /v1/ai-sdk/chat", need(ScopeRunsWrite, s.aiSDKChat)},
		{"GET /v1/ai-sdk/chat/{id}/stream", need(ScopeRunsRead, s.aiSDKResume)},
		{"POST /v1/ag-ui/run", need(ScopeRunsWrite, s.aguiRun)},
		{"GET /v1/batches/{id}", need(ScopeRunsRead, s.getBatch)},
		{"POST /v1/batches/{id}/cancel", need(ScopeRunsWrite, s.cancelBatch)},
		{"POST /v1/schedules", need(ScopeRunsWrite, s.createSchedule)},
		{"GET /v1/schedules", need(ScopeRunsRead, s.listSchedules)},
		{"GET /v1/schedules/{id}", need(ScopeRunsRead, s.getSchedule)},
		{"DELETE /v1/schedules/{id}", need(ScopeRunsWrite, s.deleteSchedule)},
		{"POST /v1/schedules/{id}/pause", need(ScopeRunsWrite, s.pauseSchedule)},
		{"POST /v1/schedules/{id}/resume", need(ScopeRunsWrite, s.resumeSchedule)},
		{"POST /v1/schedules/{id}/trigger", need(ScopeRunsWrite, s.triggerSchedule)},
		{"GET /v1/dead-letters", need(ScopeAdmin, s.listDeadLetters)},
		{"GET /v1/agents", need(ScopeAdmin, s.listAgents)},
		{"POST /v1/agents/{name}/upgrade", need(ScopeAdmin, s.upgradeAgent)},
		{"GET /v1/inference-jobs", need(ScopeAdmin, s.listInferenceJobs)},
		{"GET /v1/openapi.json", http.HandlerFunc(s.serveOpenAPI)},
		{"GET /{$}", console.Handler()},
		{"GET /console/", console.Handler()},
		{"GET /metrics", need(ScopeAdmin, s.serveMetrics)},
		{"GET /healthz", http.HandlerFunc(s.healthz)},
		{"GET /readyz", http.HandlerFunc(s.readyz)},
	}
}

func (s *Server) routes() {
	for _, r := range s.table() {
		s.mux.Handle(r.pattern, r.handler)
	}
}

// Routes returns the pattern of every route the server serves, in
// net/http.ServeMux's syntax ("GET /v1/runs/{id}"), so that a test can
// check that the OpenAPI document describes each.
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.table() {
		out = append(out, r.pattern)
	}
	return out
}

// Handler returns the API as one http.Handler: every route, JSON errors for
// unknown paths (404) and wrong methods (405), panics answered with 500,
// X-Content-Type-Options: nosniff on every answer, and one debug log line
// per request. A gateway without API keys checks the request's Host first
// (hosts.go); then cross-origin requests are checked (cors.go), then the
// API key (auth.go). Cancelling a request's context
// (the client going away) stops its work, an SSE stream included.
func (s *Server) Handler() http.Handler {
	return noSniff(s.logRequests(s.recoverPanics(s.checkHost(s.crossOrigin(s.authenticate(http.HandlerFunc(s.route)))))))
}

// route serves through the mux, rewriting the mux's own plain-text 404 and
// 405 answers into the JSON error shape.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	s.mux.ServeHTTP(&muxErrorWriter{ResponseWriter: w, r: r}, r)
}

// muxErrorWriter replaces the body of the mux's 404 and 405 answers (and
// keeps its headers, Allow among them).
type muxErrorWriter struct {
	http.ResponseWriter
	r        *http.Request
	replaced bool
}

func (m *muxErrorWriter) WriteHeader(status int) {
	switch status {
	case http.StatusNotFound:
		m.replaced = true
		writeError(m.ResponseWriter, apiErr(http.StatusNotFound, CodeNotFound,
			fmt.Sprintf("no route for %s %s", m.r.Method, m.r.URL.Path)))
	case http.StatusMethodNotAllowed:
		m.replaced = true
		writeError(m.ResponseWriter, apiErr(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", m.r.Method, m.r.URL.Path, m.Header().Get("Allow"))))
	default:
		m.ResponseWriter.WriteHeader(status)
	}
}

func (m *muxErrorWriter) Write(b []byte) (int, error) {
	if m.replaced {
		return len(b), nil
	}
	return m.ResponseWriter.Write(b)
}

func (m *muxErrorWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }
