package kafka_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/topics"
)

// Publishes made while a produce request is out wait for it and then leave
// together, however many handlers make them: a broker that takes 20 ms a
// produce request sees 32 concurrent publishes in a few requests. With
// Sarama's five requests in flight the first publishes each take one of
// their own, so this fails.
func TestPublisher_publishes_made_while_a_request_is_out_share_the_next(t *testing.T) {
	t.Parallel()
	const topic, partitions = "calls", 32
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	var produces atomic.Int64
	cluster.ControlKey(kmsg.Produce.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		produces.Add(1)
		time.Sleep(20 * time.Millisecond)
		return nil, nil, false // then handled as usual
	})
	pub, err := kafka.NewPublisher(kafka.Plain(cluster.ListenAddrs()...), wlog)
	if err != nil {
		t.Fatalf("NewPublisher: %v", err)
	}
	t.Cleanup(func() { _ = pub.Close() })

	// One run on each partition: Sarama sends a partition's next batch only
	// once its last is answered, which would split the requests whatever
	// the number in flight.
	keys := make([]string, partitions)
	for i, found := 0, 0; found < partitions; i++ {
		k := fmt.Sprint("run-", i)
		if p := kafka.PartitionOf([]byte(k), partitions); keys[p] == "" {
			keys[p] = k
			found++
		}
	}
	msg := func(i int) *message.Message {
		m := message.NewMessage(fmt.Sprint(i), []byte("{}"))
		m.Metadata.Set(topics.MetadataRunID, keys[i])
		return m
	}
	// Warm the producer up: Sarama starts a partition's producer with the
	// partition's first message.
	for i := range partitions {
		if err := pub.Publish(topic, msg(i)); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	produces.Store(0)

	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, partitions)
	for i := range partitions {
		wg.Go(func() {
			<-start
			errs <- pub.Publish(topic, msg(i))
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	// The first publish leaves alone, those that came while it was written
	// in a second request, which waits for the first's answer; the rest
	// gather meanwhile and leave in one request or, when some come late,
	// two.
	if got := produces.Load(); got > 4 {
		t.Errorf("%d produce requests for %d concurrent publishes, want at most 4", got, partitions)
	}
}
