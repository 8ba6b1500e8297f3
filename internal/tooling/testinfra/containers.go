package testinfra

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

// EnvContainers, set to 1 (or true), makes Kafka and Redis start containers
// through testcontainers-go when a Docker engine answers; without one they
// fall back to their in-process choices, said once in the output.
const EnvContainers = "STEPWISE_TEST_CONTAINERS"

// Images the containers run.
const (
	KafkaImage = "confluentinc/confluent-local:7.5.0" // Kafka 3.5 in KRaft mode
	RedisImage = "redis:7-alpine"
)

// dockerCheckTimeout bounds the one Docker check of a test process.
const dockerCheckTimeout = 2 * time.Second

// containerStartTimeout bounds pulling and starting one container.
const containerStartTimeout = 3 * time.Minute

// dockerHealth checks, once per process, whether a Docker engine answers,
// and says once on stderr when it does not. testcontainers' own checks wait
// forever on an engine that accepts connections and never answers, so the
// check runs aside and is abandoned at the deadline.
var dockerHealth = sync.OnceValue(func() error {
	err := pingDocker(dockerCheckTimeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testinfra: %s=1 but no Docker engine answers (%v); using in-process Kafka and the usual Redis instead\n", EnvContainers, err)
	}
	return err
})

func pingDocker(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		cli, err := testcontainers.NewDockerClientWithOpts(ctx)
		if err != nil {
			done <- err
			return
		}
		defer cli.Close()
		_, err = cli.Ping(ctx, client.PingOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer within %v", timeout)
	}
}

// useContainers reports whether EnvContainers asks for containers and a
// Docker engine answers.
func useContainers() bool {
	on, _ := strconv.ParseBool(os.Getenv(EnvContainers))
	return on && dockerHealth() == nil
}

// KafkaContainer starts a Kafka container (KafkaImage) private to t and
// returns its broker addresses. It is removed when t ends. It fails t when
// the container does not start; it needs a Docker engine.
func KafkaContainer(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), containerStartTimeout)
	defer cancel()
	c, err := tckafka.Run(ctx, KafkaImage, tckafka.WithClusterID("stepwise-test"))
	testcontainers.CleanupContainer(t, c)
	if err != nil {
		t.Fatalf("start kafka container %s: %v", KafkaImage, err)
	}
	brokers, err := c.Brokers(ctx)
	if err != nil {
		t.Fatalf("kafka container brokers: %v", err)
	}
	return brokers
}

// RedisContainer starts a Redis container (RedisImage) private to t and
// returns its URL. It is removed when t ends. It fails t when the container
// does not start; it needs a Docker engine.
func RedisContainer(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), containerStartTimeout)
	defer cancel()
	c, err := tcredis.Run(ctx, RedisImage)
	testcontainers.CleanupContainer(t, c)
	if err != nil {
		t.Fatalf("start redis container %s: %v", RedisImage, err)
	}
	url, err := c.ConnectionString(ctx)
	if err != nil {
		t.Fatalf("redis container url: %v", err)
	}
	return url + "/0"
}
