package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/metrics"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/secrets"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// ConnectTimeout bounds how long Connect waits for Kafka and Redis.
const ConnectTimeout = 10 * time.Second

// Stack is a connected program: its configuration, its clients, and the
// publisher every component shares. Publisher may be replaced before a Run
// method is called (tests wrap it to duplicate or reorder messages).
type Stack struct {
	Config    *config.Config
	Names     topics.Names
	Kafka     kafka.Cluster // the brokers, with TLS and SASL when they need them
	Redis     redis.UniversalClient
	Store     *store.Store
	Publisher message.Publisher
	Logger    *slog.Logger
	Plugins   *plugin.Registry // the plugins agents may enable
	// Metrics counts what the stack's workers and gateway do (GET /metrics,
	// --metrics).
	Metrics *metrics.Set
	// Redact hides the configuration's secrets (and the Kafka and Redis
	// passwords) in what workers store and in the stack's log.
	Redact *secrets.Redactor
	// Insecure lets a gateway with no API key listen beyond loopback
	// (--insecure); see CheckExposure.
	Insecure bool

	wmLogger  watermill.LoggerAdapter
	transport transport
	waits     redis.UniversalClient // the store's client for event waits (redis.go, waitClient); nil: Redis
}

// Connect loads the configuration, connects to Redis and Kafka, and creates
// the topics (the static ones and one per tool queue). A missing or
// unreachable address is an error that says which and how to give it.
func Connect(ctx context.Context, o Options) (*Stack, error) {
	cfg, err := o.config() // its mistakes first: they need no infrastructure to be seen
	if err != nil {
		return nil, err
	}
	o.Config = cfg
	cluster, errK := o.cluster()
	cluster.MaxMessageBytes = cfg.Kafka.MaxMessageBytes
	_, errR := o.redisURL()
	if err := errors.Join(errK, errR); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	s, err := open(ctx, o)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Stack, error) {
		_ = s.Redis.Close()
		return nil, err
	}
	if err := kafka.Check(ctx, cluster); err != nil {
		return fail(err)
	}
	all := append(s.Names.Static(), queueTopics(s.Names, s.Config.Queues())...)
	if err := kafka.EnsureTopics(ctx, cluster, all, s.Config.Kafka.Partitions, compactedTopics(s.Names, s.Config.Runs.Archive)...); err != nil {
		return fail(fmt.Errorf("create topics: %w", err))
	}
	pub, err := kafka.NewPublisher(cluster, s.wmLogger)
	if err != nil {
		return fail(err)
	}
	s.Kafka, s.Publisher = cluster, pub
	s.transport = kafkaTransport{cluster: cluster, partitions: s.Config.Kafka.Partitions, logger: s.wmLogger}
	return s, nil
}

// InProcess returns a stack whose messages travel through an in-process Go
// channel instead of Kafka: the same handlers, store and Redis, no broker.
// It is for measuring what the broker costs (benchmarks); it has no consumer
// groups, so run one worker of each kind on it.
func InProcess(ctx context.Context, o Options) (*Stack, error) {
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	s, err := open(ctx, o)
	if err != nil {
		return nil, err
	}
	// Persistent: a message published before its subscriber joined still
	// arrives (Kafka keeps it too); the channel keeps what passed through it.
	ch := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 1024, Persistent: true}, s.wmLogger)
	s.Publisher, s.transport = ch, channelTransport{ch: ch}
	return s, nil
}

// open loads the configuration and connects to Redis: what every stack has
// before its transport.
func open(ctx context.Context, o Options) (*Stack, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg, err := o.config()
	if err != nil {
		return nil, err
	}
	url, err := o.redisURL()
	if err != nil {
		return nil, err
	}
	rdb, err := connectRedis(ctx, url, o.RedisSecurity)
	if err != nil {
		return nil, err
	}
	redact := secrets.FromEnv(append(cfg.SecretEnvs(), EnvKafkaPassword, EnvRedisPassword))
	log = slog.New(secrets.Handler(log.Handler(), redact))
	waits := waitClient(rdb)
	s := &Stack{
		Config: cfg, Names: cfg.Kafka.Names(), Redis: rdb,
		Store:  store.New(rdb, storeOptions(cfg, waits)...),
		Logger: log, wmLogger: kafka.Logger(log), Plugins: o.plugins(), Redact: redact, Metrics: metrics.New(), waits: waits,
	}
	s.measureInference()
	return s, nil
}

// Subscriber returns a subscriber that consumes as group (with Kafka, a
// consumer group: members share the partitions).
func (s *Stack) Subscriber(group string) (message.Subscriber, error) {
	return s.transport.subscriber(group)
}

// Close closes the publisher and the Redis clients.
func (s *Stack) Close() error {
	err := errors.Join(s.Publisher.Close(), s.Redis.Close())
	if s.waits != nil {
		err = errors.Join(err, s.waits.Close())
	}
	return err
}

// storeOptions are the options of the store of cfg: its retention, the
// metadata keys runs are searched by, and with runs.archive, ended runs
// kept until they are archived.
func storeOptions(cfg *config.Config, waits redis.UniversalClient) []store.Option {
	opts := []store.Option{store.WithRetention(cfg.Runs.KeepFor()), store.WithWaitClient(waits),
		store.WithSearchableMetadata(cfg.Runs.SearchableMetadata...)}
	if cfg.Runs.Archive.On() {
		opts = append(opts, store.WithArchive())
	}
	return opts
}

// compactedTopics are the compacted topics a deployment with archive has:
// run-archive when runs are archived to it.
func compactedTopics(names topics.Names, archive config.Archive) []string {
	if archive.To == config.ArchiveToTopic {
		return []string{names.RunArchive()}
	}
	return nil
}

func queueTopics(names topics.Names, queues []string) []string {
	out := make([]string, len(queues))
	for i, q := range queues {
		out[i] = names.ToolCalls(q)
	}
	return out
}
