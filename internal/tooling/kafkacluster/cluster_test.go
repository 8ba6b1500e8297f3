package kafkacluster_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stepwise-run/stepwise/internal/tooling/kafkacluster"
)

// envRun asks for this package's tests: they start Java processes and fetch
// Apache Kafka from Maven Central the first time, so `make test-kafka`
// runs them, not `make test`.
const envRun = "STEPWISE_TEST_KAFKA_CLUSTER"

func TestCluster_survives_a_killed_broker_and_takes_it_back(t *testing.T) {
	if os.Getenv(envRun) == "" {
		t.Skip(envRun + " is not set (make test-kafka sets it)")
	}
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: %v", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := kafkacluster.Up(ctx, kafkacluster.Options{Dir: dir, Nodes: 3, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Down() })

	cfg := sarama.NewConfig()
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	// A node killed -9 leads its partitions until the controller fences
	// it, broker.session.timeout.ms (9 s) later: retries cover 15 s.
	cfg.Producer.Retry.Max = 60
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	admin, err := sarama.NewClusterAdmin([]string{c.Nodes[0].Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	minISR := "2"
	if err := admin.CreateTopic("t", &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 3,
		ConfigEntries: map[string]*string{"min.insync.replicas": &minISR}}, false); err != nil {
		t.Fatal(err)
	}
	produce := func(key string) {
		t.Helper()
		p, err := sarama.NewSyncProducer([]string{c.Nodes[0].Addr(), c.Nodes[2].Addr()}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for range 10 {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "t", Key: sarama.StringEncoder(key)}); err != nil {
				t.Fatalf("produce %s: %v", key, err)
			}
		}
	}
	produce("before")

	if err := c.Kill(2); err != nil {
		t.Fatal(err)
	}
	produce("one-down") // two replicas of three meet min.insync.replicas
	if err := c.Start(ctx, 2); err != nil {
		t.Fatal(err)
	}
	produce("after")

	again, err := kafkacluster.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Down(); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		// Gone, or a zombie this process has yet to reap: either way not
		// running (its state letter follows the parenthesised name).
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(n.PID) + "/stat")
		if fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); err == nil && len(fields) > 0 && fields[0] != "Z" {
			t.Errorf("node %d (pid %d) still runs after Down: %s", n.ID, n.PID, fields[0])
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Down left %s: %v", dir, err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
