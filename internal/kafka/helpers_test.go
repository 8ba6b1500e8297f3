package kafka_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	wmkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

// wlog is the Watermill logger of the tests: silent.
var wlog = watermill.NopLogger{}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// unique returns a topic or group name private to this test run.
func unique(t testing.TB, what string) string {
	name := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	return what + "." + name + "." + watermill.NewShortUUID()
}

// stack is a broker with topics, a publisher and a dead-letter topic.
type stack struct {
	brokers    []string
	pub        message.Publisher
	deadLetter string
}

func newStack(t testing.TB, partitions int32, topicNames ...string) stack {
	t.Helper()
	brokers := testinfra.Kafka(t)
	s := stack{brokers: brokers, deadLetter: unique(t, "dead-letter")}
	ensure(t, brokers, partitions, append(topicNames, s.deadLetter)...)
	pub, err := kafka.NewPublisher(kafka.Plain(brokers...), wlog)
	if err != nil {
		t.Fatalf("NewPublisher: %v", err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	s.pub = pub
	return s
}

func ensure(t testing.TB, brokers []string, partitions int32, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := kafka.EnsureTopics(ctx, kafka.Plain(brokers...), names, partitions); err != nil {
		t.Fatalf("EnsureTopics: %v", err)
	}
}

func (s stack) router(t testing.TB, cfg kafka.RouterConfig) *message.Router {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	cfg.DeadLetterPublisher = s.pub
	cfg.DeadLetterTopic = s.deadLetter
	r, err := kafka.NewRouter(cfg)
	if err != nil {
		t.Fatalf("NewRouter: %v", err)
	}
	return r
}

func (s stack) subscriber(t testing.TB, group string, opts ...kafka.SubscriberOption) message.Subscriber {
	t.Helper()
	sub, err := kafka.NewSubscriber(kafka.Plain(s.brokers...), group, wlog, opts...)
	if err != nil {
		t.Fatalf("NewSubscriber: %v", err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	return sub
}

func (s stack) publish(t testing.TB, topic, runID, payload string) {
	t.Helper()
	msg := message.NewMessage(watermill.NewUUID(), []byte(payload))
	if runID != "" {
		msg.Metadata.Set("run_id", runID)
	}
	if err := s.pub.Publish(topic, msg); err != nil {
		t.Fatalf("publish to %s: %v", topic, err)
	}
}

// run runs r until the test ends.
func run(t testing.TB, r *message.Router) {
	t.Helper()
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
	case err := <-done:
		t.Fatalf("router stopped at start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("router did not start within 10s")
	}
}

// eventually is testinfra.Eventually with what it waits for named first.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testinfra.Eventually(t, d, cond, func() string { return what })
}

// received is what a handler saw of one message.
type received struct {
	payload   string
	metadata  message.Metadata
	key       string
	partition int32
}

// recorder collects the messages a handler acknowledged.
type recorder struct {
	mu   sync.Mutex
	msgs []received
}

func (r *recorder) add(msg *message.Message) {
	key, _ := kafkaKey(msg)
	part, _ := kafkaPartition(msg)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, received{payload: string(msg.Payload), metadata: msg.Metadata, key: key, partition: part})
}

func (r *recorder) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.msgs...)
}

func (r *recorder) len() int { return len(r.all()) }

// collect consumes topic in its own group into a recorder until the test
// ends.
func (s stack) collect(t testing.TB, topic string) *recorder {
	t.Helper()
	rec := &recorder{}
	r := s.router(t, kafka.RouterConfig{})
	r.AddConsumerHandler("collect", topic, s.subscriber(t, unique(t, "collector")), func(msg *message.Message) error {
		rec.add(msg)
		return nil
	})
	run(t, r)
	return rec
}

// topicSize returns how many records topic holds, over all partitions.
func topicSize(t testing.TB, brokers []string, topic string) int64 {
	t.Helper()
	client, err := sarama.NewClient(brokers, kafka.SaramaConfig())
	if err != nil {
		t.Fatalf("sarama client: %v", err)
	}
	defer client.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		t.Fatalf("partitions of %s: %v", topic, err)
	}
	var n int64
	for _, p := range parts {
		off, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatalf("offset of %s/%d: %v", topic, p, err)
		}
		n += off
	}
	return n
}

func kafkaKey(msg *message.Message) (string, bool) {
	k, ok := wmkafka.MessageKeyFromCtx(msg.Context())
	return string(k), ok
}

func kafkaPartition(msg *message.Message) (int32, bool) {
	return wmkafka.MessagePartitionFromCtx(msg.Context())
}
