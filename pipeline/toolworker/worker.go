package toolworker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/stepwise-run/stepwise/internal/workpool"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/worker"
	"github.com/stepwise-run/stepwise/topics"
)

// Config is what a tool worker needs; see worker.Deps.
type Config = worker.Deps

// Worker executes tool calls. HandleToolCall is safe for concurrent use.
type Worker struct {
	ctx        context.Context
	store      *store.Store
	pub        topics.Publisher
	names      topics.Names
	cfg        *config.Config
	settings   config.ToolWorker
	maxTries   int
	id         string
	now        func() time.Time
	log        *slog.Logger
	pool       *workpool.Pool
	exec       *executors
	plugins    map[string]*plugin.Set
	anyPlugins bool // some agent enables a plugin: calls run the tool-worker phases
}

// New returns a worker whose executions live as long as ctx. Cancelling ctx
// abandons executions in flight without committing them.
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
	ex, err := newExecutors(ctx, cfg.Config, log)
	if err != nil {
		return nil, fmt.Errorf("toolworker: %w", err)
	}
	go ex.publishCatalog(ctx, cfg.Catalog, cfg.Config, log)
	return &Worker{
		ctx:        ctx,
		store:      cfg.Store,
		pub:        cfg.Publisher,
		names:      cfg.Names,
		cfg:        cfg.Config,
		settings:   cfg.Config.ToolWorker,
		maxTries:   cfg.Config.StepWorker.MaxAttempts,
		id:         cfg.WorkerID,
		now:        cfg.Now,
		log:        log,
		pool:       workpool.New(cfg.Config.ToolWorker.Concurrency),
		exec:       ex,
		plugins:    sets,
		anyPlugins: anyPlugins,
	}, nil
}

// Wait blocks until the executions in flight have returned, then stops the
// MCP servers.
func (w *Worker) Wait() {
	w.pool.Wait()
	w.exec.close()
}
