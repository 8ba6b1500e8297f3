package embedded_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/embedded"
	"github.com/stepwise-run/stepwise/internal/kafka"
)

func startKafka(t *testing.T, addr string, opts ...embedded.KafkaOption) *embedded.Kafka {
	t.Helper()
	k, err := embedded.StartKafka(addr, opts...)
	if err != nil {
		t.Fatalf("StartKafka(%q): %v", addr, err)
	}
	t.Cleanup(k.Close)
	return k
}

func check(t *testing.T, brokers []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := kafka.Check(ctx, kafka.Plain(brokers...)); err != nil {
		t.Fatalf("Check(%v): %v", brokers, err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestStartKafka_on_port_0_serves_Kafka_on_a_random_local_port(t *testing.T) {
	t.Parallel()
	k := startKafka(t, "127.0.0.1:0")
	addrs := k.Addrs()
	if len(addrs) != 1 || !strings.HasPrefix(addrs[0], "127.0.0.1:") || strings.HasSuffix(addrs[0], ":0") {
		t.Fatalf("Addrs() = %v, want one 127.0.0.1:PORT", addrs)
	}
	check(t, addrs)
	k.Close()
	k.Close() // a second Close is harmless
}

func TestStartKafka_on_a_wildcard_host_advertises_loopback(t *testing.T) {
	t.Parallel()
	k := startKafka(t, "0.0.0.0:0")
	if a := k.Addrs()[0]; !strings.HasPrefix(a, "127.0.0.1:") {
		t.Fatalf("Addrs() = %v, want 127.0.0.1:PORT", k.Addrs())
	}
	check(t, k.Addrs())
}

func TestStartKafka_fails_on_a_taken_or_bad_address(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, addr := range []string{ln.Addr().String(), "no-port"} {
		if k, err := embedded.StartKafka(addr); err == nil {
			k.Close()
			t.Errorf("StartKafka(%q) succeeded", addr)
		}
	}
}

func TestStartKafka_creates_the_given_topics(t *testing.T) {
	t.Parallel()
	k := startKafka(t, "127.0.0.1:0", embedded.WithTopics("a", "b"), embedded.WithPartitions(3))
	client, err := sarama.NewClient(k.Addrs(), kafka.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, topic := range []string{"a", "b"} {
		parts, err := client.Partitions(topic)
		if err != nil || len(parts) != 3 {
			t.Errorf("topic %s: %d partitions, %v; want 3", topic, len(parts), err)
		}
	}
}

func TestStartKafka_with_a_data_dir_keeps_messages_across_a_restart(t *testing.T) {
	t.Parallel()
	addr, dir := freeAddr(t), filepath.Join(t.TempDir(), "kafka")

	k := startKafka(t, addr, embedded.WithDataDir(dir), embedded.WithTopics("kept"))
	prod, err := sarama.NewSyncProducer(k.Addrs(), kafka.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	part, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "kept", Key: sarama.StringEncoder("r-1"), Value: sarama.StringEncoder("hello")})
	if err != nil {
		t.Fatal(err)
	}
	prod.Close()
	k.Close()

	k = startKafka(t, addr, embedded.WithDataDir(dir))
	cons, err := sarama.NewConsumer(k.Addrs(), kafka.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition("kept", part, off)
	if err != nil {
		t.Fatalf("consume kept/%d after restart: %v", part, err)
	}
	defer pc.Close()
	select {
	case m := <-pc.Messages():
		if string(m.Value) != "hello" || string(m.Key) != "r-1" {
			t.Errorf("after restart got key %q value %q", m.Key, m.Value)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no message after restart within 5s")
	}
}

func TestStartRedis_serves_Redis_with_expiring_keys(t *testing.T) {
	t.Parallel()
	r, err := embedded.StartRedis("127.0.0.1:0")
	if err != nil {
		t.Fatalf("StartRedis: %v", err)
	}
	t.Cleanup(r.Close)
	if !strings.HasPrefix(r.URL(), "redis://127.0.0.1:") || !strings.HasSuffix(r.URL(), "/0") {
		t.Errorf("URL() = %q", r.URL())
	}
	opts, err := redis.ParseURL(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Set(ctx, "lease", "w-1", 50*time.Millisecond).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := rdb.Get(ctx, "lease").Err()
		if errors.Is(err, redis.Nil) {
			break
		}
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("key with a 50ms TTL still there after 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartRedis_on_a_wildcard_host_gives_a_loopback_URL(t *testing.T) {
	t.Parallel()
	r, err := embedded.StartRedis("0.0.0.0:0")
	if err != nil {
		t.Fatalf("StartRedis: %v", err)
	}
	defer r.Close()
	if !strings.HasPrefix(r.URL(), "redis://127.0.0.1:") {
		t.Errorf("URL() = %q, want redis://127.0.0.1:PORT/0", r.URL())
	}
	if _, err := embedded.StartRedis("bad"); err == nil {
		t.Error(`StartRedis("bad") succeeded`)
	}
}
