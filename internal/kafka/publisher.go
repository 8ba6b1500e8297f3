package kafka

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stepwise-run/stepwise/topics"
)

// Publisher is a Watermill publisher on a Sarama sync producer that keys
// every message by its run_id metadata (topics.MetadataRunID, see
// [Marshaler]) and uses [Cluster.SaramaConfig].
//
// Publish is synchronous: it returns once the leader of each message's
// partition has it (acks=all), or with the error. The messages of one call
// go as one batch (Sarama's SendMessages: one produce request per broker,
// not one per message), so a handler that publishes several at once — the
// calls of a step — waits once. It may be called from many goroutines at
// once. Close the publisher when done; Publish after Close fails.
//
// The producer is idempotent: a retry of a produce whose first attempt
// landed (a leader lost mid-publish) is dropped by the broker, not
// written twice. It compresses with LZ4: a third fewer bytes to the
// brokers and their replicas, at the same steps a second (ADR 0049). It keeps one produce request in flight per
// broker (Sarama's default is five; idempotence needs one): what is published while a request is out goes in the
// next one, together. Unloaded, a message leaves at once as before; under
// load, the messages of many handlers share a request instead of each
// taking its own, which nearly halves the produce requests of the
// ten-steps benchmark and the CPU they cost the client and the broker
// (docs/benchmarks.md).
//
// A record over the cluster's MaxMessageBytes is refused before anything
// of the call is sent, and a broker's refusal of a record for its size is
// returned the same way: both wrap topics.ErrTooLarge, which no retry
// mends (ADR 0050).
type Publisher struct {
	producer sarama.SyncProducer
	maxBytes int
	closed   atomic.Bool
}

// NewPublisher returns a Publisher on c. It fails at once when no broker
// answers. The logger is not used: failures come back from Publish.
func NewPublisher(c Cluster, _ watermill.LoggerAdapter) (message.Publisher, error) {
	if len(c.Brokers) == 0 {
		return nil, errors.New("kafka publisher: no brokers given")
	}
	cfg := c.SaramaConfig()
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Idempotent = true
	cfg.Producer.Compression = sarama.CompressionLZ4
	producer, err := sarama.NewSyncProducer(c.Brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("kafka publisher on %s: %w", c, err)
	}
	return &Publisher{producer: producer, maxBytes: cfg.Producer.MaxMessageBytes}, nil
}

// Publish sends msgs to topic; see [Publisher].
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	if p.closed.Load() {
		return errors.New("kafka publisher: closed")
	}
	batch := make([]*sarama.ProducerMessage, len(msgs))
	for i, m := range msgs {
		rec, err := Marshaler{}.Marshal(topic, m)
		if err != nil {
			return err
		}
		if size := rec.ByteSize(recordVersion); size > p.maxBytes {
			return fmt.Errorf("produce a message of run %q to %s: %w: %d bytes, the limit is %d (kafka.max_message_bytes)",
				m.Metadata.Get(topics.MetadataRunID), topic, topics.ErrTooLarge, size, p.maxBytes)
		}
		batch[i] = rec
	}
	switch len(batch) {
	case 0:
		return nil
	case 1:
		if _, _, err := p.producer.SendMessage(batch[0]); err != nil {
			return fmt.Errorf("produce a message of run %q to %s: %w", msgs[0].Metadata.Get(topics.MetadataRunID), topic, sizeError(err))
		}
		return nil
	}
	if err := p.producer.SendMessages(batch); err != nil {
		return fmt.Errorf("produce %d messages to %s: %w", len(batch), topic, sizeError(err))
	}
	return nil
}

// recordVersion is the record format of the Kafka versions stepwise
// speaks (SaramaConfig: 3.0), by which Sarama sizes a record.
const recordVersion = 2

// sizeError returns err wrapped in topics.ErrTooLarge when the broker
// refused a record for its size, and err otherwise.
func sizeError(err error) error {
	tooLarge := func(err error) bool {
		return errors.Is(err, sarama.ErrMessageSizeTooLarge) || errors.Is(err, sarama.ErrMessageSetSizeTooLarge)
	}
	var each sarama.ProducerErrors
	if tooLarge(err) || (errors.As(err, &each) && slices.ContainsFunc(each, func(pe *sarama.ProducerError) bool { return tooLarge(pe.Err) })) {
		return fmt.Errorf("%w: %w", topics.ErrTooLarge, err)
	}
	return err
}

// Close flushes and closes the producer; closing twice does nothing.
func (p *Publisher) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	return p.producer.Close()
}
