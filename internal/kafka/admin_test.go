package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

func partitionsOf(t *testing.T, brokers []string, topic string) int {
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
	return len(parts)
}

// deadAddr returns a local address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestEnsureTopics_creates_missing_topics_and_leaves_existing_ones(t *testing.T) {
	t.Parallel()
	brokers := testinfra.Kafka(t)
	a, b, c := unique(t, "a"), unique(t, "b"), unique(t, "c")
	ctx := context.Background()

	if err := kafka.EnsureTopics(ctx, kafka.Plain(brokers...), []string{a, b, a}, 3); err != nil {
		t.Fatalf("first EnsureTopics: %v", err)
	}
	if err := kafka.EnsureTopics(ctx, kafka.Plain(brokers...), []string{a, b, c}, 5); err != nil {
		t.Fatalf("second EnsureTopics: %v", err)
	}
	if err := kafka.EnsureTopics(ctx, kafka.Plain(brokers...), []string{a, b, c}, 5); err != nil {
		t.Fatalf("third EnsureTopics: %v", err)
	}
	for topic, want := range map[string]int{a: 3, b: 3, c: 5} {
		if got := partitionsOf(t, brokers, topic); got != want {
			t.Errorf("%s has %d partitions, want %d", topic, got, want)
		}
	}
}

func TestEnsureTopics_replicates_three_times_with_two_in_sync_on_three_brokers(t *testing.T) {
	t.Parallel()
	brokers := testinfra.Kafka(t)
	admin, err := sarama.NewClusterAdmin(brokers, kafka.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	nodes, _, err := admin.DescribeCluster()
	if err != nil {
		t.Fatal(err)
	}
	topic := unique(t, "replicated")
	ensure(t, brokers, 2, topic)
	// The broker asked may learn of the new topic's partitions a moment
	// after the one that created it.
	var meta []*sarama.TopicMetadata
	testinfra.Eventually(t, 10*time.Second, func() bool {
		meta, err = admin.DescribeTopics([]string{topic})
		return err == nil && len(meta) == 1 && len(meta[0].Partitions) == 2
	}, func() string { return fmt.Sprintf("describe %s: %v %+v", topic, err, meta) })
	wantRF, wantISR := min(3, len(nodes)), "1"
	if wantRF == 3 {
		wantISR = "2"
	}
	for _, p := range meta[0].Partitions {
		if len(p.Replicas) != wantRF {
			t.Errorf("partition %d has replicas %v on %d brokers, want %d", p.ID, p.Replicas, len(nodes), wantRF)
		}
	}
	if wantRF < 3 {
		return // the embedded broker: one node, and min.insync.replicas left to the broker
	}
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"min.insync.replicas"}})
	if err != nil || len(entries) != 1 || entries[0].Value != wantISR {
		t.Fatalf("min.insync.replicas of %s: %v %+v, want %s", topic, err, entries, wantISR)
	}
}

func TestEnsureTopics_refuses_fewer_than_one_partition(t *testing.T) {
	t.Parallel()
	err := kafka.EnsureTopics(context.Background(), kafka.Plain(deadAddr(t)), []string{"x"}, 0)
	if err == nil || !strings.Contains(err.Error(), "partitions") {
		t.Errorf("EnsureTopics(0 partitions) = %v, want an error about partitions", err)
	}
}

func TestEnsureTopics_on_an_unreachable_broker_fails_with_ErrUnreachable(t *testing.T) {
	t.Parallel()
	addr := deadAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := kafka.EnsureTopics(ctx, kafka.Plain(addr), []string{"x"}, 1)
	if !errors.Is(err, kafka.ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Errorf("EnsureTopics = %v, want ErrUnreachable naming %s", err, addr)
	}
}

func TestCheck_accepts_a_live_broker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := kafka.Check(ctx, kafka.Plain(testinfra.Kafka(t)...)); err != nil {
		t.Errorf("Check = %v", err)
	}
}

func TestCheck_names_the_unreachable_broker(t *testing.T) {
	t.Parallel()
	addr := deadAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := kafka.Check(ctx, kafka.Plain(addr))
	if !errors.Is(err, kafka.ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Errorf("Check = %v, want ErrUnreachable naming %s", err, addr)
	}
	if err := kafka.Check(ctx, kafka.Cluster{}); !errors.Is(err, kafka.ErrUnreachable) {
		t.Errorf("Check(no brokers) = %v, want ErrUnreachable", err)
	}
}

func TestCheck_returns_when_the_context_is_cancelled(t *testing.T) {
	t.Parallel()
	// A listener that accepts and never answers: only the context ends the wait.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	err = kafka.Check(ctx, kafka.Plain(ln.Addr().String()))
	if !errors.Is(err, context.Canceled) || !errors.Is(err, kafka.ErrUnreachable) {
		t.Errorf("Check = %v, want ErrUnreachable wrapping context.Canceled", err)
	}
}

func TestEnsureTopics_creates_the_compacted_ones_with_cleanup_policy_compact_kept_for_good(t *testing.T) {
	t.Parallel()
	brokers := testinfra.Kafka(t)
	plain, compacted := unique(t, "plain"), unique(t, "compacted")
	if err := kafka.EnsureTopics(context.Background(), kafka.Plain(brokers...), []string{plain}, 1, compacted); err != nil {
		t.Fatal(err)
	}
	admin, err := sarama.NewClusterAdmin(brokers, kafka.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for topic, want := range map[string]string{plain: "delete", compacted: "compact"} {
		entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"cleanup.policy"}})
		if err != nil || len(entries) != 1 || entries[0].Value != want {
			t.Errorf("cleanup.policy of %s: %v %+v, want %s", topic, err, entries, want)
		}
	}
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: compacted, ConfigNames: []string{"retention.ms"}})
	if err != nil || len(entries) != 1 || entries[0].Value != "-1" {
		t.Errorf("retention.ms of %s: %v %+v, want -1 (no time retention)", compacted, err, entries)
	}
}
