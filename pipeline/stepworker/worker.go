package stepworker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/stepwise-run/stepwise/internal/workpool"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/stop"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/tools/catalog"
	"github.com/stepwise-run/stepwise/pipeline/worker"
	"github.com/stepwise-run/stepwise/topics"
)

// Config is what a step worker needs; see worker.Deps.
type Config = worker.Deps

// Worker holds the Step and StepEnd handlers and the sweeper. Its handlers
// are safe for concurrent use by a Watermill router.
type Worker struct {
	ctx        context.Context // bounds the work on the pool
	store      *store.Store
	pub        topics.Publisher
	names      topics.Names
	cfg        *config.Config
	settings   config.StepWorker
	id         string
	now        func() time.Time
	log        *slog.Logger
	pool       *workpool.Pool
	models     *models
	conditions conditions
	catalog    *catalog.Catalog
	schemas    schemas
	stops      map[string]*stop.Conditions
	plugins    map[string]*plugin.Set
}

// New returns a worker whose background work (inference on the pool) lives
// as long as ctx. Cancelling ctx abandons inference in flight without
// committing; the leases expire and the sweeper re-drives the steps.
func New(ctx context.Context, cfg Config) (*Worker, error) {
	cfg, err := cfg.WithDefaults("stepworker")
	if err != nil {
		return nil, err
	}
	models, err := newModels(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("stepworker: %w", err)
	}
	conds, err := compileConditions(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("stepworker: %w", err)
	}
	stops, err := compileStops(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("stepworker: %w", err)
	}
	plugins, err := cfg.Plugins.ForAgents(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("stepworker: %w", err)
	}
	s := cfg.Config.StepWorker
	return &Worker{
		ctx:        ctx,
		store:      cfg.Store,
		pub:        cfg.Publisher,
		names:      cfg.Names,
		cfg:        cfg.Config,
		settings:   s,
		id:         cfg.WorkerID,
		now:        cfg.Now,
		log:        cfg.Logger.With("worker_id", cfg.WorkerID),
		pool:       workpool.New(s.Concurrency),
		models:     models,
		conditions: conds,
		catalog:    cfg.Catalog,
		stops:      stops,
		plugins:    plugins,
	}, nil
}

// Wait blocks until the inference in flight has returned.
func (w *Worker) Wait() { w.pool.Wait() }

func (w *Worker) lease(now time.Time) store.Lease {
	return store.Lease{Owner: w.id, Until: now.Add(w.settings.Lease.Duration)}
}
