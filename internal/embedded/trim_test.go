package embedded_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stepwise-run/stepwise/internal/embedded"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

// trimEvery is the trim period of the brokers in these tests.
const trimEvery = 20 * time.Millisecond

func TestKafka_drops_the_records_every_group_reading_them_has_committed(t *testing.T) {
	t.Parallel()
	k := startKafka(t, "127.0.0.1:0", embedded.WithTopics("work", "unread", "signal"), embedded.WithPartitions(1),
		embedded.WithTrimEvery(trimEvery))
	client := newClient(t, k)
	produce(t, client, "work", 0, 300)
	produce(t, client, "unread", 0, 300)
	produce(t, client, "signal", 0, 300)
	full := logSize(t, client, "work")

	commit(t, client, "fast", "work", 300)
	commit(t, client, "slow", "work", 100)
	waitLogStart(t, client, "work", 100)
	// A later round, seen by its trim of another topic, did not go past
	// the slower group either.
	commit(t, client, "fast", "signal", 300)
	waitLogStart(t, client, "signal", 299)
	if got := logStart(t, client, "work"); got != 100 {
		t.Fatalf("log start of work = %d with a group at 100, want 100", got)
	}
	if got := firstValue(t, client, "work", 100); got != "work-100" {
		t.Fatalf("record 100 of work = %q, want work-100", got)
	}

	// Read by every group: all go but the last record, which tells a
	// restarted broker where the partition ends.
	commit(t, client, "slow", "work", 300)
	waitLogStart(t, client, "work", 299)
	if size := logSize(t, client, "work"); size == 0 || size > full/100 {
		t.Errorf("work holds %d of %d bytes once every record is read, want its last one's", size, full)
	}
	if got := logStart(t, client, "unread"); got != 0 {
		t.Errorf("log start of unread = %d, want 0: no group reads it", got)
	}

	// What is published after a trim is kept for the readers.
	produce(t, client, "work", 300, 10)
	if got := firstValue(t, client, "work", 300); got != "work-300" {
		t.Fatalf("record 300 of work = %q, want work-300", got)
	}
}

// A group whose member subscribes to a topic, but that has committed
// nothing on it yet, has read none of it (it starts from the oldest
// record): the topic keeps its records.
func TestKafka_keeps_the_records_a_subscribed_group_has_not_committed(t *testing.T) {
	t.Parallel()
	k := startKafka(t, "127.0.0.1:0", embedded.WithTopics("t", "signal"), embedded.WithPartitions(1),
		embedded.WithTrimEvery(trimEvery))
	client := newClient(t, k)
	produce(t, client, "t", 0, 50)
	produce(t, client, "signal", 0, 50)
	joinAndSync(t, dial(t, k.Addrs()[0]), "subscribed") // subscribes to t

	commit(t, client, "done", "t", 50)
	commit(t, client, "done", "signal", 50)
	waitLogStart(t, client, "signal", 49) // a round has seen both commits
	if got := logStart(t, client, "t"); got != 0 {
		t.Fatalf("log start of t = %d while a subscribed group has committed nothing, want 0", got)
	}
}

func TestStartKafka_refuses_a_negative_trim_period(t *testing.T) {
	t.Parallel()
	if k, err := embedded.StartKafka("127.0.0.1:0", embedded.WithTrimEvery(-time.Second)); err == nil {
		k.Close()
		t.Fatal("StartKafka with a negative trim period: no error")
	}
}

func newClient(t *testing.T, k *embedded.Kafka) sarama.Client {
	t.Helper()
	client, err := sarama.NewClient(k.Addrs(), kafka.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// produce publishes n records to partition 0 of topic, valued
// "<topic>-<offset>" from offset from on (the partition's end), in a
// record batch each.
func produce(t *testing.T, client sarama.Client, topic string, from, n int) {
	t.Helper()
	cfg := kafka.SaramaConfig()
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	prod, err := sarama.NewSyncProducer([]string{client.Brokers()[0].Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range n { // one request, so one record batch, each
		msg := &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", topic, from+i))}
		if _, _, err := prod.SendMessage(msg); err != nil {
			t.Fatal(err)
		}
	}
}

// commit commits offset on partition 0 of topic for group, as a consumer
// outside a group's membership does once it has read the records before it
// (generation -1).
func commit(t *testing.T, client sarama.Client, group, topic string, offset int64) {
	t.Helper()
	coord, err := client.Coordinator(group)
	if err != nil {
		t.Fatal(err)
	}
	req := &sarama.OffsetCommitRequest{Version: 5, ConsumerGroup: group, ConsumerGroupGeneration: -1}
	req.AddBlock(topic, 0, offset, 0, "")
	resp, err := coord.CommitOffset(req)
	if err != nil {
		t.Fatalf("commit %s at %d for %s: %v", topic, offset, group, err)
	}
	if kerr := resp.Errors[topic][0]; !errors.Is(kerr, sarama.ErrNoError) {
		t.Fatalf("commit %s at %d for %s: %v", topic, offset, group, kerr)
	}
}

func logStart(t *testing.T, client sarama.Client, topic string) int64 {
	t.Helper()
	off, err := client.GetOffset(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

func waitLogStart(t *testing.T, client sarama.Client, topic string, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := logStart(t, client, topic)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log start of %s = %d after 10s, want %d", topic, got, want)
		}
		time.Sleep(trimEvery)
	}
}

// firstValue is the value of the record at offset of partition 0 of topic.
func firstValue(t *testing.T, client sarama.Client, topic string, offset int64) string {
	t.Helper()
	cons, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, offset)
	if err != nil {
		t.Fatalf("consume %s from %d: %v", topic, offset, err)
	}
	defer pc.Close()
	select {
	case m := <-pc.Messages():
		return string(m.Value)
	case <-time.After(5 * time.Second):
		t.Fatalf("no record of %s from %d within 5s", topic, offset)
		return ""
	}
}

// logSize is the bytes partition 0 of topic holds, as DescribeLogDirs
// (kafka-log-dirs) reports it.
func logSize(t *testing.T, client sarama.Client, topic string) int64 {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	// Not closed: that would close the shared client.
	dirs, err := admin.DescribeLogDirs([]int32{client.Brokers()[0].ID()})
	if err != nil {
		t.Fatal(err)
	}
	for _, ds := range dirs {
		for _, d := range ds {
			for _, tp := range d.Topics {
				if tp.Topic != topic {
					continue
				}
				for _, p := range tp.Partitions {
					if p.PartitionID == 0 {
						return p.Size
					}
				}
			}
		}
	}
	t.Fatalf("DescribeLogDirs has no %s/0", topic)
	return 0
}

// A broker that speaks only TLS and wants a SASL login trims too: the
// trimmer logs in as the broker's own housekeeping does.
func TestKafka_with_TLS_and_SASL_drops_what_its_readers_have_read(t *testing.T) {
	t.Parallel()
	certs := testinfra.NewCerts(t)
	login := kafka.SASL{Mechanism: kafka.SASLScramSHA256, User: "stepwise", Password: "kafka-secret"}
	k := startKafka(t, "127.0.0.1:0", embedded.WithTLS(certs.Server), embedded.WithSASL(login),
		embedded.WithTopics("work"), embedded.WithPartitions(1), embedded.WithTrimEvery(trimEvery))
	cluster := kafka.Cluster{Brokers: k.Addrs(), TLS: certs.Client(t), SASL: login}
	client, err := sarama.NewClient(k.Addrs(), cluster.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	prod, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "work", Partition: 0, Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, client, "g", "work", 20)
	waitLogStart(t, client, "work", 19)
}
