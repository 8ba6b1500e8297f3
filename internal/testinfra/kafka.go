package testinfra

import (
	"os"
	"strings"
	"testing"

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
