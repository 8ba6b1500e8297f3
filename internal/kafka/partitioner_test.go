package kafka_test

import (
	"testing"

	"github.com/IBM/sarama"

	"github.com/stepwise-run/stepwise/internal/kafka"
)

func TestPartitioner_places_keys_like_the_Java_client(t *testing.T) {
	t.Parallel()
	// murmur2 values from Kafka's UtilsTest.testMurmur2.
	for key, murmur := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		for _, n := range []int32{1, 3, 12, 100} {
			p, err := kafka.NewPartitioner("t").Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(key)}, n)
			if want := (murmur & 0x7fffffff) % n; err != nil || p != want {
				t.Errorf("Partition(%q, %d) = %d, %v; want %d", key, n, p, err, want)
			}
		}
	}
}

func TestPartitioner_spreads_messages_without_a_key(t *testing.T) {
	t.Parallel()
	p := kafka.NewPartitioner("t")
	if !p.RequiresConsistency() {
		t.Error("RequiresConsistency() = false: Sarama could move a run's messages")
	}
	seen := map[int32]bool{}
	for range 200 {
		part, err := p.Partition(&sarama.ProducerMessage{}, 4)
		if err != nil || part < 0 || part >= 4 {
			t.Fatalf("Partition(no key, 4) = %d, %v", part, err)
		}
		seen[part] = true
	}
	if len(seen) < 2 {
		t.Errorf("200 keyless messages all went to partitions %v", seen)
	}
}
