package deadletter_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	wmkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/deadletter"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/topics"
)

// env is one test's broker, Redis, topics and publisher.
type env struct {
	brokers []string
	rdb     *redis.Client
	names   topics.Names
	pub     message.Publisher
}

func newEnv(t testing.TB) env {
	t.Helper()
	e := env{
		brokers: testinfra.Kafka(t),
		rdb:     testinfra.RedisClient(t),
		names:   topics.NewNames("dlq-" + watermill.NewShortUUID() + "."),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := kafka.EnsureTopics(ctx, kafka.Plain(e.brokers...), e.names.Static(), 3); err != nil {
		t.Fatalf("EnsureTopics: %v", err)
	}
	e.pub = e.publisher(t)
	return e
}

func (e env) publisher(t testing.TB) message.Publisher {
	t.Helper()
	pub, err := kafka.NewPublisher(kafka.Plain(e.brokers...), watermill.NopLogger{})
	if err != nil {
		t.Fatalf("NewPublisher: %v", err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	return pub
}

// queue returns a Queue on e; change, when set, adjusts its configuration.
func (e env) queue(t testing.TB, change func(*deadletter.Config)) *deadletter.Queue {
	t.Helper()
	cfg := deadletter.Config{Kafka: kafka.Plain(e.brokers...), Redis: e.rdb, Publisher: e.pub, Names: e.names}
	if change != nil {
		change(&cfg)
	}
	q, err := deadletter.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return q
}

// publish publishes payload to topic as a message of run runID.
func (e env) publish(t *testing.T, topic, runID, payload string) {
	t.Helper()
	m := message.NewMessage(watermill.NewUUID(), []byte(payload))
	m.Metadata.Set(topics.MetadataRunID, runID)
	if err := e.pub.Publish(topic, m); err != nil {
		t.Fatalf("publish to %s: %v", topic, err)
	}
}

// accepted is a message the consumer took, and on which partition.
type accepted struct {
	runID     string
	payload   string
	metadata  message.Metadata
	partition int32
}

// consumer stands for a stepwise consumer whose handler refuses every
// message permanently — its cause not yet fixed — until fix is called.
// Each refusal's reason counts the deliveries of that payload, so a
// message that fails again is dead-lettered with a new reason.
type consumer struct {
	mu       sync.Mutex
	fixed    bool
	attempts map[string]int
	took     []accepted
}

// consume runs a router of e (dead letters to e's dead-letter topic) with
// c's handler on each of topicNames, until t ends.
func (e env) consume(t *testing.T, topicNames ...string) *consumer {
	t.Helper()
	c := &consumer{attempts: map[string]int{}}
	r, err := kafka.NewRouter(kafka.RouterConfig{
		Logger:              slog.New(slog.NewTextHandler(io.Discard, nil)),
		DeadLetterPublisher: e.pub,
		DeadLetterTopic:     e.names.DeadLetter(),
	})
	if err != nil {
		t.Fatalf("NewRouter: %v", err)
	}
	sub, err := kafka.NewSubscriber(kafka.Plain(e.brokers...), "consumer-"+watermill.NewShortUUID(), watermill.NopLogger{})
	if err != nil {
		t.Fatalf("NewSubscriber: %v", err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	for _, topic := range topicNames {
		r.AddNoPublisherHandler("handle_"+topic, topic, sub, c.handle)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("router: %v", err)
		}
	})
	select {
	case <-r.Running():
	case <-time.After(10 * time.Second):
		t.Fatal("router did not start within 10s")
	}
	return c
}

func (c *consumer) handle(msg *message.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	payload := string(msg.Payload)
	c.attempts[payload]++
	if !c.fixed {
		return topics.Permanent(fmt.Errorf("refused %s (attempt %d)", payload, c.attempts[payload]))
	}
	c.took = append(c.took, accepted{
		runID: msg.Metadata.Get(topics.MetadataRunID), payload: payload,
		metadata: msg.Metadata, partition: partitionOf(msg),
	})
	return nil
}

// partitionOf is the partition msg was consumed from.
func partitionOf(msg *message.Message) int32 {
	p, _ := wmkafka.MessagePartitionFromCtx(msg.Context())
	return p
}

func (c *consumer) fix() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fixed = true
}

func (c *consumer) accepted() []accepted {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]accepted(nil), c.took...)
}

// waitList polls the dead-letter topic until it lists n records.
func waitList(t *testing.T, q *deadletter.Queue, n int) []deadletter.Record {
	t.Helper()
	var recs []deadletter.Record
	testinfra.Eventually(t, 20*time.Second, func() bool {
		var err error
		recs, err = q.List(context.Background(), deadletter.Filter{})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		return len(recs) == n
	}, func() string { return fmt.Sprintf("%d dead-letter records, want %d: %+v", len(recs), n, recs) })
	return recs
}

// recordsOf reads every record of topic.
func recordsOf(t *testing.T, e env, topic string) []*sarama.ConsumerMessage {
	t.Helper()
	var out []*sarama.ConsumerMessage
	err := kafka.ReadTopic(context.Background(), kafka.Plain(e.brokers...), topic, func(m *sarama.ConsumerMessage) error {
		out = append(out, m)
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	return out
}
