package testinfra_test

import (
	"context"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

func checkKafka(t *testing.T, brokers []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := kafka.Check(ctx, kafka.Plain(brokers...)); err != nil {
		t.Fatalf("Check(%v): %v", brokers, err)
	}
}

func TestKafka_gives_each_test_its_own_broker(t *testing.T) {
	t.Setenv(testinfra.EnvKafka, "")
	t.Setenv(testinfra.EnvContainers, "")
	a, b := testinfra.Kafka(t), testinfra.Kafka(t)
	if len(a) == 0 || len(b) == 0 || a[0] == b[0] {
		t.Fatalf("Kafka gave %v and %v, want two different brokers", a, b)
	}
	checkKafka(t, a)
	checkKafka(t, b)
}

func TestKafka_uses_the_brokers_named_in_the_environment(t *testing.T) {
	t.Setenv(testinfra.EnvKafka, " kafka-1:9092, ,kafka-2:9092 ")
	got := testinfra.Kafka(t)
	if len(got) != 2 || got[0] != "kafka-1:9092" || got[1] != "kafka-2:9092" {
		t.Errorf("Kafka = %q, want [kafka-1:9092 kafka-2:9092]", got)
	}
}

// With containers asked for and no Docker engine, Kafka and Redis fall back
// to their in-process choices. (Where Docker answers they start containers;
// the assertions hold either way.)
func TestKafka_with_containers_but_no_Docker_falls_back_to_an_in_process_broker(t *testing.T) {
	t.Setenv(testinfra.EnvKafka, "")
	t.Setenv(testinfra.EnvContainers, "1")
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/stepwise-test/docker.sock")
	checkKafka(t, testinfra.Kafka(t))
}

func TestRedis_with_containers_but_no_Docker_falls_back(t *testing.T) {
	t.Setenv(testinfra.EnvRedis, "")
	t.Setenv(testinfra.EnvContainers, "1")
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/stepwise-test/docker.sock")
	rdb := testinfra.RedisClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
}
