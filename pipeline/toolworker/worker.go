package toolworker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/limits"
	"github.com/stepwise-run/stepwise/pipeline/metrics"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/secrets"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/worker"
	"github.com/stepwise-run/stepwise/topics"
)

// Config is what a tool worker needs; see worker.Deps.
type Config = worker.Deps

// Worker executes tool calls. HandleToolCall is safe for concurrent use.
type Worker struct {
	ctx      context.Context
	cancel   context.CancelFunc
	store    *store.Store
	pub      topics.Publisher
	names    topics.Names
	cfg      *config.Config
	settings config.ToolWorker
	maxTries int
	now      func() time.Time
	log      *slog.Logger
	pool     *worker.Pool
	claims   *worker.Claims
	ahead    *ahead                       // calls claimed with an earlier call of their step
	running  *worker.Watch[store.CallRef] // the calls executing here, to stop a cancelled one's (running.go)
	// limitedTools are the tools with limits, whose calls a claim leaves
	// to their own requests (they take a slot of their limit first).
	limitedTools []string
	exec         *executors
	plugins      map[string]*plugin.Set
	anyPlugins   bool // some agent enables a plugin: calls run the tool-worker phases
	redact       *secrets.Redactor
	metrics      *metrics.Set
	limits       *limits.Limiter
}

// New returns a worker whose executions live as long as ctx, or until
// Drain gives up on them. An execution that ends that way is abandoned
// without committing and its lease is released, so another worker takes
// the call over at once.
func New(ctx context.Context, cfg Config) (*Worker, error) {
	cfg, err := cfg.WithDefaults("toolworker")
	if err != nil {
		return nil, err
	}
	sets, err := cfg.Plugins.ForAgents(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("toolworker: %w", err)
	}
	anyPlugins := false
	for _, a := range cfg.Config.Agents {
		anyPlugins = anyPlugins || len(a.Plugins) > 0
	}
	log := cfg.Logger.With("worker_id", cfg.WorkerID)
	ctx, cancel := context.WithCancel(ctx)
	ex, err := newExecutors(ctx, cfg.Config, cfg.Redact, log)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("toolworker: %w", err)
	}
	go ex.publishCatalog(ctx, cfg.Catalog, cfg.Config, log)
	running := newRunning(cfg.Store)
	go running.Run(ctx, func(err error) { log.Error("read the status of the calls executing here", "error", err) })
	pool := worker.NewPool(cfg.Config.ToolWorker.Concurrency)
	cfg.Metrics.PoolBusy("toolworker", pool.Busy)
	return &Worker{
		ctx:          ctx,
		cancel:       cancel,
		store:        cfg.Store,
		redact:       cfg.Redact,
		metrics:      cfg.Metrics,
		limits:       cfg.Limits,
		pub:          cfg.Publisher,
		names:        cfg.Names,
		cfg:          cfg.Config,
		settings:     cfg.Config.ToolWorker,
		maxTries:     cfg.Config.StepWorker.MaxAttempts,
		now:          cfg.Now,
		log:          log,
		pool:         pool,
		claims:       worker.NewClaims(cfg.WorkerID),
		ahead:        newAhead(),
		running:      running,
		limitedTools: limitedTools(cfg.Config, cfg.Limits),
		exec:         ex,
		plugins:      sets,
		anyPlugins:   anyPlugins,
	}, nil
}

// Wait blocks until the work handed to the pool so far has returned.
func (w *Worker) Wait() { w.pool.Wait() }

// Drain is the end of a graceful shutdown, called once the handler gets no
// more messages: it waits up to grace for the executions in flight to
// commit, then abandons what is left (each abandoned call releases its
// lease, so another worker takes it over at once), and stops the MCP
// servers once nothing runs.
func (w *Worker) Drain(grace time.Duration) {
	worker.Drain(w.pool, grace, w.cancel)
	w.exec.close()
}

// limitedTools are the tools of cfg with limits in l, sorted.
func limitedTools(cfg *config.Config, l *limits.Limiter) []string {
	var out []string
	for name := range cfg.Limits.Tools {
		if l.Limited(limits.Tool, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
