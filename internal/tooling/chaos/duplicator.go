package chaos

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// dupMaxDelay bounds how long after a record the duplicator publishes its
// copy: long enough that the copy often arrives after the run has moved on
// (a stale message), short enough that it lands within the churn.
const dupMaxDelay = 3 * time.Second

// topicPartition names one partition of one topic.
type topicPartition struct {
	topic     string
	partition int32
}

// duplicator consumes every stepwise topic but the dead-letter one from the
// moment it starts and publishes a random fraction of the records once
// more, byte for byte (same partition, key, value and headers), up to
// dupMaxDelay later: the duplicates and stale redeliveries that at-least-
// once delivery allows. It never copies a copy: a record whose bytes it has
// seen before is left alone. Its methods are safe for concurrent use.
type duplicator struct {
	client   sarama.Client
	consumer sarama.Consumer
	pcs      []sarama.PartitionConsumer
	producer sarama.SyncProducer
	fraction float64
	logf     func(string, ...any)

	mu       sync.Mutex
	rng      *rand.Rand
	seen     map[[32]byte]struct{}
	produced map[topicPartition]map[int64]struct{} // offsets of the copies
	counts   map[string]int                        // copies per topic
	failures int
	stopped  bool
	timers   []*time.Timer
	inflight sync.WaitGroup
	readers  sync.WaitGroup
}

// newDuplicator connects to brokers and starts copying the records of
// topics (full names) published from now on.
func newDuplicator(brokers, topics []string, fraction float64, seed uint64, logf func(string, ...any)) (*duplicator, error) {
	cfg := saramaConfig()
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	client, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("duplicator: connect: %w", err)
	}
	d := &duplicator{
		client: client, fraction: fraction, logf: logf,
		rng:      rand.New(rand.NewPCG(seed, 0xd0b1e)),
		seen:     map[[32]byte]struct{}{},
		produced: map[topicPartition]map[int64]struct{}{},
		counts:   map[string]int{},
	}
	fail := func(err error) (*duplicator, error) {
		d.close()
		return nil, err
	}
	if d.producer, err = sarama.NewSyncProducerFromClient(client); err != nil {
		return fail(fmt.Errorf("duplicator: producer: %w", err))
	}
	if d.consumer, err = sarama.NewConsumerFromClient(client); err != nil {
		return fail(fmt.Errorf("duplicator: consumer: %w", err))
	}
	for _, topic := range topics {
		parts, err := client.Partitions(topic)
		if err != nil {
			return fail(fmt.Errorf("duplicator: partitions of %s: %w", topic, err))
		}
		for _, p := range parts {
			pc, err := d.consumer.ConsumePartition(topic, p, sarama.OffsetNewest)
			if err != nil {
				return fail(fmt.Errorf("duplicator: consume %s/%d: %w", topic, p, err))
			}
			d.pcs = append(d.pcs, pc)
			d.readers.Go(func() {
				for m := range pc.Messages() {
					d.consider(m)
				}
			})
		}
	}
	return d, nil
}

// consider schedules a copy of m, with probability fraction, unless m is a
// copy itself.
func (d *duplicator) consider(m *sarama.ConsumerMessage) {
	fp := fingerprint(m)
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, dup := d.seen[fp]; dup || d.stopped {
		return
	}
	d.seen[fp] = struct{}{}
	if d.rng.Float64() >= d.fraction {
		return
	}
	delay := time.Duration(d.rng.Int64N(int64(dupMaxDelay)))
	msg := &sarama.ProducerMessage{Topic: m.Topic, Partition: m.Partition, Value: sarama.ByteEncoder(m.Value)}
	if m.Key != nil {
		msg.Key = sarama.ByteEncoder(m.Key)
	}
	for _, h := range m.Headers {
		msg.Headers = append(msg.Headers, sarama.RecordHeader{Key: h.Key, Value: h.Value})
	}
	d.inflight.Add(1)
	d.timers = append(d.timers, time.AfterFunc(delay, func() {
		defer d.inflight.Done()
		d.publish(msg)
	}))
}

func (d *duplicator) publish(msg *sarama.ProducerMessage) {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	part, off, err := d.producer.SendMessage(msg)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.failures++
		if d.failures <= 3 {
			d.logf("duplicator: publish to %s: %v", msg.Topic, err)
		}
		return
	}
	tp := topicPartition{msg.Topic, part}
	if d.produced[tp] == nil {
		d.produced[tp] = map[int64]struct{}{}
	}
	d.produced[tp][off] = struct{}{}
	d.counts[msg.Topic]++
}

// fingerprint identifies a record by its topic, partition, key, value and
// headers: a copy has the same one as its original.
func fingerprint(m *sarama.ConsumerMessage) [32]byte {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(m.Topic))
	field(binary.BigEndian.AppendUint32(nil, uint32(m.Partition)))
	field(m.Key)
	field(m.Value)
	for _, hd := range m.Headers {
		field(hd.Key)
		field(hd.Value)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// stop stops copying: copies not yet published are dropped, and stop
// returns once none is being published. The duplicator still answers
// isCopy and total afterwards.
func (d *duplicator) stop() {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	d.stopped = true
	for _, t := range d.timers {
		if t.Stop() {
			d.inflight.Done() // its function will never run
		}
	}
	d.timers = nil
	d.mu.Unlock()
	d.inflight.Wait()
	d.close()
}

func (d *duplicator) close() {
	for _, pc := range d.pcs {
		pc.AsyncClose() // ends its reader's loop
	}
	d.readers.Wait()
	if d.consumer != nil {
		_ = d.consumer.Close()
	}
	if d.producer != nil {
		_ = d.producer.Close()
	}
	_ = d.client.Close()
}

// isCopy reports whether the record at offset of tp was published by the
// duplicator.
func (d *duplicator) isCopy(tp topicPartition, offset int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.produced[tp][offset]
	return ok
}

// total returns the number of copies published, per topic base name and in
// all, and the number of publishes that failed.
func (d *duplicator) total(prefix string) (perTopic map[string]int, all, failures int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	perTopic = map[string]int{}
	for t, n := range d.counts {
		perTopic[strings.TrimPrefix(t, prefix)] += n
		all += n
	}
	return perTopic, all, d.failures
}

// stepwiseTopics lists the topics under prefix that the duplicator copies:
// every one but the dead-letter topic, sorted.
func stepwiseTopics(brokers []string, prefix string) ([]string, error) {
	client, err := sarama.NewClient(brokers, saramaConfig())
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	defer client.Close()
	return stepwiseTopicsOf(client, prefix, false)
}

// stepwiseTopicsOf lists the topics under prefix, sorted, the dead-letter
// topic only when asked.
func stepwiseTopicsOf(client sarama.Client, prefix string, withDeadLetter bool) ([]string, error) {
	all, err := client.Topics()
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	var out []string
	for _, t := range all {
		if strings.HasPrefix(t, prefix) && (withDeadLetter || t != prefix+"dead-letter") {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out, nil
}

// saramaConfig is the client configuration of the duplicator and of the
// readers of run-results and dead-letter, in the protocol version stepwise
// speaks.
func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	cfg.ClientID = "stepwise-chaos"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Consumer.Return.Errors = false
	return cfg
}
