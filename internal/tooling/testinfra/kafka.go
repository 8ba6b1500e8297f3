package testinfra

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stepwise-run/stepwise/internal/embedded"
)

// EnvKafka names existing Kafka brokers (comma-separated host:port) the
// tests use instead of starting one.
const EnvKafka = "STEPWISE_TEST_KAFKA"

// Kafka returns the addresses of Kafka brokers for t, in order of
// preference: EnvKafka when set (shared by every test: use unique topic and
// group names); a Kafka container when EnvContainers is 1 and a Docker
// engine answers; otherwise an in-process kfake broker (KafkaFake). Brokers
// it starts are private to t and stopped when t ends; topics are not
// created automatically.
func Kafka(t testing.TB) []string {
	t.Helper()
	if v := os.Getenv(EnvKafka); v != "" {
		var brokers []string
		for b := range strings.SplitSeq(v, ",") {
			if b = strings.TrimSpace(b); b != "" {
				brokers = append(brokers, b)
			}
		}
		if len(brokers) > 0 {
			return brokers
		}
	}
	if useContainers() {
		return KafkaContainer(t)
	}
	return KafkaFake(t)
}

// KafkaFake starts an in-process kfake broker on a random local port,
// private to t and stopped when t ends, and returns its address.
func KafkaFake(t testing.TB) []string {
	t.Helper()
	k, err := embedded.StartKafka("127.0.0.1:0")
	if err != nil {
		t.Fatalf("start in-process kafka: %v", err)
	}
	t.Cleanup(k.Close)
	return k.Addrs()
}

// TopicPrefix returns the topic prefix t's stack should use: "stepwise."
// (the default) on a broker private to t, and one of t's own on the
// brokers of EnvKafka, which every test shares: the test's name and this
// test process's nonce, so neither another test nor an earlier run of the
// same one (its committed offsets, its records) is in the way. Consumer
// groups take the same prefix. On EnvKafka's brokers the topics under it
// are deleted when t ends (deleteTopics).
func TopicPrefix(t testing.TB) string {
	t.Helper()
	if os.Getenv(EnvKafka) == "" {
		return "stepwise."
	}
	prefix := "t" + processNonce() + "." + testName(t) + "."
	t.Cleanup(func() { deleteTopics(t, prefix) })
	return prefix
}

// testName is t's name as a topic name may hold it, at most 120
// characters (a topic name is at most 249).
func testName(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, t.Name())
	const keep = 120
	if len(name) > keep {
		name = name[:keep]
	}
	return name
}

// deleteTopics deletes the topics under prefix on EnvKafka's brokers, so
// the shared cluster holds the topics of the tests running, not of every
// test run so far: with ten topics a stack, a package's tests made
// thousands of partitions, and a broker of scripts/kafka's 384 MB heap ran
// out of memory. A failure is logged: the topics stay, the test stands.
func deleteTopics(t testing.TB, prefix string) {
	cfg := sarama.NewConfig()
	cfg.Admin.Timeout = 30 * time.Second
	admin, err := sarama.NewClusterAdmin(strings.Split(os.Getenv(EnvKafka), ","), cfg)
	if err != nil {
		t.Logf("delete the topics of %s: %v", prefix, err)
		return
	}
	defer admin.Close()
	names, err := admin.ListTopics()
	if err != nil {
		t.Logf("delete the topics of %s: %v", prefix, err)
		return
	}
	for name := range names {
		if strings.HasPrefix(name, prefix) {
			if err := admin.DeleteTopic(name); err != nil {
				t.Logf("delete topic %s: %v", name, err)
			}
		}
	}
}

// processNonce tells apart the test processes that share EnvKafka's
// brokers: a package's tests run in one process, and the runs of a test
// over time are each a process of their own.
var processNonce = sync.OnceValue(func() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
})
