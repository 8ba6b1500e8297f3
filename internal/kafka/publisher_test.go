package kafka_test

import (
	"crypto/rand"
	"errors"
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

// A publisher has one produce request out at a time: what is published
// meanwhile waits, then leaves together. The broker holds the first
// request of a burst while the other 31 publishes are made; they then
// leave in at most three requests, however they came: the one the client
// took right after the first (it waits for the first's answer), the one
// Sarama readies behind it, and the rest. With Sarama's five requests in
// flight the client sends four more at once while the first is held, each
// with what had come by then, and the rest after: 7 here, so this fails.
func TestPublisher_publishes_made_while_a_request_is_out_share_the_next(t *testing.T) {
	t.Parallel()
	const topic, partitions = "calls", 32
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	var (
		produces atomic.Int64 // requests that reached the broker
		hold     atomic.Bool  // hold the next request until release
	)
	held, release := make(chan struct{}), make(chan struct{})
	cluster.ControlKey(kmsg.Produce.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		produces.Add(1)
		if hold.CompareAndSwap(true, false) {
			close(held)
			cluster.SleepControl(func() { <-release })
		}
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

	hold.Store(true)
	var wg sync.WaitGroup
	errs := make(chan error, partitions)
	wg.Go(func() { errs <- pub.Publish(topic, msg(0)) })
	<-held
	after := produces.Load()
	for i := 1; i < partitions; i++ {
		wg.Go(func() { errs <- pub.Publish(topic, msg(i)) })
	}
	time.Sleep(500 * time.Millisecond) // ample for the 31 to reach the client
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	if n := produces.Load() - after; n > 3 {
		t.Errorf("the other %d publishes left in %d produce requests, want at most 3", partitions-1, n)
	}
}

// A record over the limit is refused as topics.ErrTooLarge, which no retry
// mends: by the publisher before it leaves, when over the cluster's
// MaxMessageBytes, and the same when the broker refuses it (its
// message.max.bytes below what the publisher was told). A record within
// both goes out.
func TestPublisher_a_record_over_the_limit_is_refused_as_too_large(t *testing.T) {
	t.Parallel()
	const topic = "sized"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": "8192"}))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	msg := func(size int) *message.Message { // random bytes: compression does not shrink them under the broker's limit
		payload := make([]byte, size)
		rand.Read(payload)
		m := message.NewMessage("", payload)
		m.Metadata.Set(topics.MetadataRunID, "r-1")
		return m
	}
	cases := []struct {
		name     string
		limit    int
		size     int
		tooLarge bool
	}{
		{"within both limits", 16 << 10, 1 << 10, false},
		{"over the publisher's limit", 4 << 10, 6 << 10, true},
		{"over the broker's limit only", 16 << 10, 12 << 10, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pub, err := kafka.NewPublisher(kafka.Cluster{Brokers: cluster.ListenAddrs(), MaxMessageBytes: c.limit}, wlog)
			if err != nil {
				t.Fatalf("NewPublisher: %v", err)
			}
			t.Cleanup(func() { _ = pub.Close() })
			for _, batch := range [][]*message.Message{{msg(c.size)}, {msg(10), msg(c.size)}} {
				err := pub.Publish(topic, batch...)
				if got := errors.Is(err, topics.ErrTooLarge); got != c.tooLarge {
					t.Errorf("%d messages: Publish = %v, want too large: %v", len(batch), err, c.tooLarge)
				}
			}
		})
	}
}
