package deadletter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// DefaultClaimTimeout is how long a redrive's claim on a record lasts when
// the redrive does not confirm it (it crashed, or its publish failed):
// after it, a later redrive publishes the record again.
const DefaultClaimTimeout = time.Minute

// Config configures [New].
type Config struct {
	// Kafka is how to reach the brokers. Required.
	Kafka kafka.Cluster
	// Redis holds the re-drive marks. Required.
	Redis redis.UniversalClient
	// Publisher re-publishes records; it should be internal/kafka's
	// publisher, so re-driven messages land on the partition of their run.
	// Required.
	Publisher message.Publisher
	// Names are the deployment's topic names: the dead-letter topic, and
	// the prefix a short --topic is completed with.
	Names topics.Names
	// KeyPrefix prefixes the Redis keys of the marks; "" means
	// store.DefaultPrefix, beside the runs.
	KeyPrefix string
	// ClaimTimeout is how long an unconfirmed claim blocks other redrives;
	// 0 means DefaultClaimTimeout.
	ClaimTimeout time.Duration
	// Now is the clock of ages, --since and the marks; nil means time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.KeyPrefix == "" {
		c.KeyPrefix = store.DefaultPrefix
	}
	if c.ClaimTimeout == 0 {
		c.ClaimTimeout = DefaultClaimTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if len(c.Kafka.Brokers) == 0 {
		errs = append(errs, errors.New("Kafka brokers are missing"))
	}
	if c.Redis == nil {
		errs = append(errs, errors.New("Redis is missing"))
	}
	if c.Publisher == nil {
		errs = append(errs, errors.New("Publisher is missing"))
	}
	if c.ClaimTimeout < 0 {
		errs = append(errs, fmt.Errorf("ClaimTimeout is %v, want ≥ 0", c.ClaimTimeout))
	}
	return errors.Join(errs...)
}

// Queue is a deployment's dead-letter topic: it lists the records there and
// re-drives them to their original topics, each once. It holds no state of
// its own (Kafka holds the records, Redis what was re-driven), so any
// number of Queues, in any number of processes, may list and re-drive at
// once.
type Queue struct {
	kafka        kafka.Cluster
	pub          message.Publisher
	names        topics.Names
	marks        marks
	claimTimeout time.Duration
	now          func() time.Time
}

// New returns the Queue cfg describes. It does not talk to Kafka or Redis.
func New(cfg Config) (*Queue, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("dead-letter queue: %w", err)
	}
	return &Queue{
		kafka: cfg.Kafka, pub: cfg.Publisher, names: cfg.Names,
		marks:        newMarks(cfg.Redis, cfg.KeyPrefix, cfg.Names.DeadLetter()),
		claimTimeout: cfg.ClaimTimeout, now: cfg.Now,
	}, nil
}

// List returns the records of the dead-letter topic that f keeps, in topic
// order (partition, then offset), each with its State. It reads the topic
// up to its end as it stands when called.
func (q *Queue) List(ctx context.Context, f Filter) ([]Record, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	recs, err := q.read(ctx)
	if err != nil {
		return nil, err
	}
	now := q.now()
	kept := recs[:0]
	for _, r := range recs {
		if f.skip(r, q.names, now) == "" {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

// read returns every record of the dead-letter topic with its State.
func (q *Queue) read(ctx context.Context) ([]Record, error) {
	var recs []Record
	err := kafka.ReadTopic(ctx, q.kafka, q.names.DeadLetter(), func(m *sarama.ConsumerMessage) error {
		r, err := decode(m)
		recs = append(recs, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := q.marks.load(ctx, recs); err != nil {
		return nil, err
	}
	return recs, nil
}
