package stepworker

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/archive"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/limits"
	"github.com/stepwise-run/stepwise/pipeline/metrics"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/scheduler"
	"github.com/stepwise-run/stepwise/pipeline/secrets"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/tools/catalog"
	"github.com/stepwise-run/stepwise/pipeline/versions"
	"github.com/stepwise-run/stepwise/pipeline/worker"
	"github.com/stepwise-run/stepwise/topics"
)

// Config is what a step worker needs; see worker.Deps.
type Config = worker.Deps

// Worker holds the Step and StepEnd handlers and the sweeper. Its handlers
// are safe for concurrent use by a Watermill router.
type Worker struct {
	ctx       context.Context // bounds the work on the pool
	cancel    context.CancelFunc
	store     *store.Store
	pub       topics.Publisher
	names     topics.Names
	cfg       *config.Config
	settings  config.StepWorker
	now       func() time.Time
	log       *slog.Logger
	pool      *worker.Pool
	decided   *worker.Pool // the reconciles after decisions (decide.go), and fan-ins when pool is full: no inference, so no inference slot
	claims    *worker.Claims
	models    *models
	catalog   *catalog.Catalog
	schemas   schemas
	versions  *versions.Catalog // the agents' versions: the configuration's, and those runs are pinned to
	plugins   map[string]*plugin.Set
	signers   map[string][][]byte // producer → keys, when decisions must be signed
	tenants   map[string]string   // producer → the one tenant whose runs its verified decisions may decide
	redact    *secrets.Redactor
	fanIn     *coalescer
	inferring *worker.Watch[string] // the inferences on the pool by run, to stop an ended run's (inferring.go)
	shares    *shares               // each tenant's share of the pool
	metrics   *metrics.Set
	limits    *limits.Limiter
	instance  string                          // this run of the process, for marks and heartbeats (marks.go)
	live      atomic.Pointer[map[string]bool] // the instances alive at the last heartbeat
	unsent    unsent                          // marks to take back
	schedules *scheduler.Firer                // fires the schedules' ticks in RunSweeper
	archive   *archive.Archiver               // of done runs, before their results (runs.archive); nil: none
}

// New returns a worker whose background work (inference on the pool) lives
// as long as ctx, or until Drain gives up on it. Work that ends that way is
// abandoned without committing and its leases are released, so another
// worker's sweeper re-drives the steps at once.
func New(ctx context.Context, cfg Config) (*Worker, error) {
	cfg, err := cfg.WithDefaults("stepworker")
	if err != nil {
		return nil, err
	}
	models, err := newModels(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("stepworker: %w", err)
	}
	vers, err := versions.New(cfg.Config, cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("stepworker: %w", err)
	}
	plugins, err := cfg.Plugins.ForAgents(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("stepworker: %w", err)
	}
	var signers map[string][][]byte
	if cfg.Config.Decisions.RequireSignature {
		if signers, err = cfg.Config.Decisions.Keys(); err != nil {
			return nil, fmt.Errorf("stepworker: %w", err)
		}
	}
	arch, err := archive.New(cfg.Config.Runs.Archive, archive.Deps{
		Store: cfg.Store, Publisher: cfg.Publisher, Names: cfg.Names, Process: cfg.WorkerID, Now: cfg.Now, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("stepworker: %w", err)
	}
	s := cfg.Config.StepWorker
	ctx, cancel := context.WithCancel(ctx)
	pool := worker.NewPool(s.Concurrency)
	cfg.Metrics.PoolBusy("stepworker", pool.Busy)
	log := cfg.Logger.With("worker_id", cfg.WorkerID)
	inferring := newInferring(cfg.Store)
	go inferring.Run(ctx, func(err error) { log.Error("read the status of the runs inferring here", "error", err) })
	return &Worker{
		ctx:       ctx,
		cancel:    cancel,
		store:     cfg.Store,
		redact:    cfg.Redact,
		metrics:   cfg.Metrics,
		limits:    cfg.Limits,
		fanIn:     newCoalescer(),
		inferring: inferring,
		shares:    newShares(pool.Size()),
		instance:  newInstance(),
		pub:       cfg.Publisher,
		names:     cfg.Names,
		cfg:       cfg.Config,
		settings:  s,
		signers:   signers,
		tenants:   cfg.Config.Decisions.Tenants(),
		now:       cfg.Now,
		log:       log,
		pool:      pool,
		decided:   worker.NewPool(s.Concurrency),
		claims:    worker.NewClaims(cfg.WorkerID),
		models:    models,
		catalog:   cfg.Catalog,
		versions:  vers,
		plugins:   plugins,
		schedules: &scheduler.Firer{Store: cfg.Store, Now: cfg.Now, Poll: s.SweepInterval.Duration, Log: cfg.Logger, Versions: vers},
		archive:   arch,
	}, nil
}

// Wait blocks until the work handed to the pools so far has returned.
func (w *Worker) Wait() {
	w.pool.Wait()
	w.decided.Wait()
}

// Drain is the end of a graceful shutdown, called once the handlers get no
// more messages: it waits up to grace for the inference in flight to commit,
// then abandons what is left (each abandoned step releases its lease, so
// another worker takes it over at once) and returns when nothing runs.
func (w *Worker) Drain(grace time.Duration) {
	worker.Drain(w.pool, grace, w.cancel)
	w.decided.Wait() // a few round trips each; abandoned too once the inference was
}

func (w *Worker) lease(owner string, now time.Time) store.Lease {
	return store.Lease{Owner: owner, Until: now.Add(w.settings.Lease.Duration)}
}
