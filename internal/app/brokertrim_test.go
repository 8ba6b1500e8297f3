package app_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stepwise-run/stepwise/internal/embedded"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

// The embedded broker drops the records of the work topics once the step
// worker's and the tool worker's groups have committed them (ADR 0031): after
// a batch of runs, each partition keeps only its last record (which tells a
// restarted broker where the partition ends).
func TestEmbeddedBroker_drops_the_work_the_workers_have_read(t *testing.T) {
	k, err := embedded.StartKafka("127.0.0.1:0", embedded.WithTrimEvery(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	stack := connect(t, infra{brokers: k.Addrs(), redisURL: testinfra.Redis(t)}, parseConfig(t, testConfig))
	workers(t, stack)
	base := serve(t, stack)
	submitAndWait(t, base, followResults(t, stack), "trim", 40)

	client, err := sarama.NewClient(k.Addrs(), kafka.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	work := []string{stack.Names.RunSteps(), stack.Names.ToolCalls(""), stack.Names.ToolResults()}
	var left string
	testinfra.Eventually(t, 20*time.Second, func() bool {
		left = ""
		for _, topic := range work {
			published, kept := 0, 0
			parts, err := client.Partitions(topic)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range parts {
				first, err := client.GetOffset(topic, p, sarama.OffsetOldest)
				if err != nil {
					t.Fatal(err)
				}
				end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
				if err != nil {
					t.Fatal(err)
				}
				published, kept = published+int(end), kept+int(max(end-first-1, 0))
			}
			if published == 0 {
				t.Fatalf("%s: no record published", topic)
			}
			if kept > 0 {
				left += fmt.Sprintf(" %s keeps %d of %d records beyond its partitions' last;", topic, kept, published)
			}
		}
		return left == ""
	}, func() string { return "the work topics still hold read records:" + left })
}
