package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/deadletter"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/limits"
	"github.com/stepwise-run/stepwise/pipeline/metrics"
	"github.com/stepwise-run/stepwise/pipeline/model/script"
	"github.com/stepwise-run/stepwise/pipeline/stepworker"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/tools/catalog"
	"github.com/stepwise-run/stepwise/pipeline/toolworker"
	"github.com/stepwise-run/stepwise/pipeline/versions"
	"github.com/stepwise-run/stepwise/pipeline/worker"
)

// catalog is where tool workers publish the MCP tools' schemas for step
// workers.
func (s *Stack) catalog() *catalog.Catalog { return catalog.New(s.Redis, "") }

// ConsumerGroup is the consumer group of a kind of worker ("stepworker",
// "toolworker"): one per kind, under the topic prefix.
func (s *Stack) ConsumerGroup(kind string) string { return s.Config.Kafka.TopicPrefix + kind }

// router builds a router for one program, consuming as group.
func (s *Stack) router(group string) (*message.Router, message.Subscriber, error) {
	sub, err := s.Subscriber(group)
	if err != nil {
		return nil, nil, err
	}
	r, err := kafka.NewRouter(kafka.RouterConfig{
		Logger: s.Logger, DeadLetterPublisher: deadLetterCounter{s.Publisher, s.Metrics}, DeadLetterTopic: s.Names.DeadLetter(),
	})
	if err != nil {
		_ = sub.Close()
		return nil, nil, err
	}
	return r, sub, nil
}

// deadLetterCounter counts what a router dead-letters, by the topic the
// message came from.
type deadLetterCounter struct {
	message.Publisher
	m *metrics.Set
}

func (d deadLetterCounter) Publish(topic string, msgs ...*message.Message) error {
	err := d.Publisher.Publish(topic, msgs...)
	if err == nil {
		for _, m := range msgs {
			d.m.DeadLettered(m.Metadata.Get(kafka.MetadataDeadLetterTopic))
		}
	}
	return err
}

// measureLag adds group's lag on topics to the metrics.
func (s *Stack) measureLag(group string, topics []string) {
	s.Metrics.ConsumerLag(group, func(ctx context.Context) ([]metrics.Lag, error) {
		lags, err := kafka.Lag(ctx, s.Kafka, group, topics)
		out := make([]metrics.Lag, len(lags))
		for i, l := range lags {
			out[i] = metrics.Lag{Topic: l.Topic, Partition: l.Partition, Messages: l.Lag}
		}
		return out, err
	})
}

// RunStepWorker runs the Step and StepEnd handlers and the sweeper until ctx
// ends. Then it shuts down gracefully: it stops consuming and leaves its
// consumer group (the other members take the partitions over at once),
// gives the inference in flight stepworker.shutdown_grace to commit, and
// releases the leases of what is still running then.
func (s *Stack) RunStepWorker(ctx context.Context) error {
	id := WorkerID("stepworker")
	w, err := stepworker.New(context.WithoutCancel(ctx), stepworker.Config{
		Store: s.Store, Publisher: s.Publisher, Names: s.Names, Config: s.Config, Catalog: s.catalog(), Plugins: s.Plugins,
		WorkerID: id, Logger: s.Logger.With("component", "stepworker"), Redact: s.Redact, Metrics: s.Metrics,
		Limits: limits.New(s.Redis, store.DefaultPrefix, s.Config.Limits),
	})
	if err != nil {
		return err
	}
	r, sub, err := s.router(s.ConsumerGroup("stepworker"))
	if err != nil {
		return err
	}
	defer sub.Close()
	r.AddNoPublisherHandler("step", s.Names.RunSteps(), sub, worker.Warm(w.HandleStep))
	r.AddNoPublisherHandler("step_end", s.Names.ToolResults(), sub, worker.Warm(w.HandleToolResult))
	r.AddNoPublisherHandler("decision", s.Names.Decisions(), sub, worker.Warm(w.HandleDecision))
	s.measureLag(s.ConsumerGroup("stepworker"), []string{s.Names.RunSteps(), s.Names.ToolResults(), s.Names.Decisions()})
	go w.RunSweeper(ctx)
	err = r.Run(ctx)
	w.Drain(s.Config.StepWorker.ShutdownGrace.Duration)
	return err
}

// RunToolWorker runs the tool handler for queues (when empty,
// toolworker.queues of the configuration, else every configured queue)
// until ctx ends, then shuts down gracefully as RunStepWorker does, with
// toolworker.shutdown_grace.
func (s *Stack) RunToolWorker(ctx context.Context, queues []string) error {
	if len(queues) == 0 {
		queues = s.Config.ToolWorker.Queues
	}
	if len(queues) == 0 {
		queues = s.Config.Queues()
	}
	if len(queues) == 0 {
		return errors.New("toolworker: no queues to consume (the configuration has no tools)")
	}
	id := WorkerID("toolworker")
	w, err := toolworker.New(context.WithoutCancel(ctx), toolworker.Config{
		Store: s.Store, Publisher: s.Publisher, Names: s.Names, Config: s.Config, Catalog: s.catalog(), Plugins: s.Plugins,
		WorkerID: id, Logger: s.Logger.With("component", "toolworker"), Redact: s.Redact, Metrics: s.Metrics,
		Limits: limits.New(s.Redis, store.DefaultPrefix, s.Config.Limits),
	})
	if err != nil {
		return err
	}
	extra := queueTopics(s.Names, queues)
	if err := s.transport.ensureTopics(ctx, extra); err != nil {
		return fmt.Errorf("create queue topics: %w", err)
	}
	r, sub, err := s.router(s.ConsumerGroup("toolworker"))
	if err != nil {
		return err
	}
	defer sub.Close()
	topics := make([]string, len(queues))
	for i, q := range queues {
		topics[i] = s.Names.ToolCalls(q)
		r.AddNoPublisherHandler("tool_"+q, topics[i], sub, worker.Warm(w.HandleToolCall))
	}
	s.measureLag(s.ConsumerGroup("toolworker"), topics)
	err = r.Run(ctx)
	w.Drain(s.Config.ToolWorker.ShutdownGrace.Duration)
	return err
}

// Gateway builds the HTTP API of this stack: its keys read from the
// environment variables the configuration names, its CORS allow-list and
// stream cap from gateway:.
func (s *Stack) Gateway() (*gateway.Server, error) {
	keys, err := apiKeys(s.Config.Auth)
	if err != nil {
		return nil, err
	}
	signer, err := decisionSigner(s.Config.Decisions)
	if err != nil {
		return nil, err
	}
	dlq, err := deadletter.New(deadletter.Config{Kafka: s.Kafka, Redis: s.Redis, Publisher: s.Publisher, Names: s.Names})
	if err != nil {
		return nil, err
	}
	s.Metrics.Gauge("stepwise_runs_active", "Runs not yet retired: created, running, waiting, or ended with the result not yet published.", nil,
		func() float64 { return float64(s.count().Active) })
	s.Metrics.Gauge("stepwise_calls_parked", "Tool calls suspended, waiting for a decision.", nil,
		func() float64 { return float64(s.count().Parked) })
	requests, err := runRequests(s.Config)
	if err != nil {
		return nil, err
	}
	vers, err := versions.New(s.Config, s.Store)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g := s.Config.Gateway
	return gateway.New(gateway.Config{
		Store: s.Store, Publisher: s.Publisher, Names: s.Names,
		Agents:      func(name string) bool { _, ok := s.Config.Agent(name); return ok },
		BatchAgents: batchAgents(s.Config),
		Versions:    vers,
		ClientTools: func(name string) bool {
			t, ok := s.Config.Tool(name)
			return ok && t.Executor.Frontend != nil
		},
		ValidateModel: func(raw json.RawMessage) error {
			_, err := script.ParseRun(raw, s.Config.Runs.MaxScriptDelay.Duration)
			return err
		},
		Ready:              s.transport.ready,
		SweepAfter:         s.Config.StepWorker.Lease.Duration,
		Logger:             s.Logger.With("component", "gateway"),
		Keys:               keys,
		CORSOrigins:        g.CORSOrigins,
		AllowedHosts:       g.AllowedHosts,
		MaxStreamsPerKey:   g.MaxStreamsPerKey,
		StreamWriteTimeout: g.WriteTimeout.Duration,
		Signer:             signer,
		Metrics:            s.Metrics,
		DeadLetters:        deadLetters(dlq),
		RunRequests:        requests,
		InferenceModels:    batchModels(s.Config),
	})
}

// runRequests is how the gateway admits the runs requested on Kafka
// (run_requests) and verifies their producers (decisions.producers, whose
// keys are read when there are any).
func runRequests(c *config.Config) (gateway.RunRequests, error) {
	rr := gateway.RunRequests{
		MaxActive: c.RunRequests.MaxActive, TenantMax: c.RunRequests.TenantMax(), BatchMax: c.RunRequests.BatchMax(),
		Tenants: c.Decisions.Tenants(), RequireSignature: c.Decisions.RequireSignature,
	}
	if len(c.Decisions.Producers) == 0 {
		return rr, nil
	}
	keys, err := c.Decisions.Keys()
	rr.Keys = keys
	return rr, err
}

// count reads the deployment's index sizes for a scrape (zero when Redis
// does not answer: the scrape goes on).
func (s *Stack) count() store.Counts {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, _ := s.Store.Count(ctx)
	return c
}

// deadLetters lists q's records for the gateway.
func deadLetters(q *deadletter.Queue) gateway.DeadLetterLister {
	return func(ctx context.Context) ([]gateway.DeadLetter, error) {
		recs, err := q.List(ctx, deadletter.Filter{})
		if err != nil {
			return nil, err
		}
		out := make([]gateway.DeadLetter, len(recs))
		for i, r := range recs {
			out[i] = gateway.DeadLetter{Partition: r.Partition, Offset: r.Offset, Time: r.Time, Topic: r.Topic, Key: r.Key,
				Reason: r.Reason, Handler: r.Handler, State: string(r.State), RedrivenAt: r.RedrivenAt}
		}
		return out, nil
	}
}

// RunGateway serves the HTTP API on l, and takes the runs requested on
// the run-requests topic (consumer group <prefix>gateway), until ctx
// ends, then shuts down gracefully (in-flight requests get
// ShutdownTimeout). It refuses to serve beyond loopback without an API key
// unless s.Insecure. The server's timeouts and header limit come from
// gateway: in the configuration.
func (s *Stack) RunGateway(ctx context.Context, l net.Listener) error {
	if err := s.CheckExposure(l.Addr()); err != nil {
		return err
	}
	gw, err := s.Gateway()
	if err != nil {
		return err
	}
	consumed := make(chan error, 1)
	consumeCtx, stopConsuming := context.WithCancel(ctx)
	go func() { consumed <- s.consumeRunRequests(consumeCtx, gw) }()
	var consumeErr error
	stopped := false // consumed was read
	defer func() {
		stopConsuming()
		if !stopped {
			<-consumed
		}
	}()
	g := s.Config.Gateway
	srv := &http.Server{
		Handler:           gw.Handler(),
		ReadHeaderTimeout: g.ReadHeaderTimeout.Duration,
		ReadTimeout:       g.ReadTimeout.Duration,
		WriteTimeout:      g.WriteTimeout.Duration,
		IdleTimeout:       g.IdleTimeout.Duration,
		MaxHeaderBytes:    g.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.Logger.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case consumeErr = <-consumed: // the consumer stopped: unless ctx ended, stop serving too
		stopped = true
		if consumeErr == nil && ctx.Err() == nil {
			consumeErr = errors.New("the run request consumer stopped")
		}
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	return errors.Join(consumeErr, srv.Shutdown(shutdown))
}

// consumeRunRequests runs gw's run request handler on the run-requests
// topic until ctx ends, and exports its consumer lag.
func (s *Stack) consumeRunRequests(ctx context.Context, gw *gateway.Server) error {
	group := s.ConsumerGroup("gateway")
	r, sub, err := s.router(group)
	if err != nil {
		return err
	}
	defer sub.Close()
	r.AddNoPublisherHandler("run_request", s.Names.RunRequests(), sub, gw.HandleRunRequest)
	s.measureLag(group, []string{s.Names.RunRequests()})
	return r.Run(ctx)
}

// ShutdownTimeout is how long the gateway waits for requests in flight
// (SSE streams included) when it stops.
const ShutdownTimeout = 5 * time.Second
