package toolworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stepwise-run/stepwise/internal/workpool"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/tools/catalog"
	"github.com/stepwise-run/stepwise/topics"
)

// Config is what a tool worker needs. Store, Publisher, Config and WorkerID
// are required; the tuning numbers come from Config.ToolWorker and the retry
// budget from Config.StepWorker.MaxAttempts.
type Config struct {
	Store     *store.Store
	Publisher topics.Publisher
	Names     topics.Names
	Config    *config.Config
	Catalog   *catalog.Catalog // where MCP tools are published for step workers; nil: not published
	Plugins   *plugin.Registry // the plugins agents may enable; nil: none
	WorkerID  string
	Now       func() time.Time // default time.Now
	Logger    *slog.Logger     // default slog.Default()
}

func (c *Config) setDefaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Names == (topics.Names{}) {
		c.Names = topics.NewNames("")
	}
}

// Validate reports every missing dependency at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("toolworker: Store is required"))
	}
	if c.Publisher == nil {
		errs = append(errs, errors.New("toolworker: Publisher is required"))
	}
	if c.Config == nil {
		errs = append(errs, errors.New("toolworker: Config is required"))
	}
	if c.WorkerID == "" {
		errs = append(errs, errors.New("toolworker: WorkerID is required"))
	}
	return errors.Join(errs...)
}

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
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Plugins == nil {
		cfg.Plugins = plugin.NewRegistry()
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
