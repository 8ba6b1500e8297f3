package kafka

import (
	"errors"
	"fmt"
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
// The producer keeps one produce request in flight per broker (Sarama's
// default is five): what is published while a request is out goes in the
// next one, together. Unloaded, a message leaves at once as before; under
// load, the messages of many handlers share a request instead of each
// taking its own, which nearly halves the produce requests of the
// ten-steps benchmark and the CPU they cost the client and the broker
// (docs/benchmarks.md).
type Publisher struct {
	producer sarama.SyncProducer
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
	producer, err := sarama.NewSyncProducer(c.Brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("kafka publisher on %s: %w", c, err)
	}
	return &Publisher{producer: producer}, nil
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
		batch[i] = rec
	}
	switch len(batch) {
	case 0:
		return nil
	case 1:
		if _, _, err := p.producer.SendMessage(batch[0]); err != nil {
			return fmt.Errorf("produce a message of run %q to %s: %w", msgs[0].Metadata.Get(topics.MetadataRunID), topic, err)
		}
		return nil
	}
	if err := p.producer.SendMessages(batch); err != nil {
		return fmt.Errorf("produce %d messages to %s: %w", len(batch), topic, err)
	}
	return nil
}

// Close flushes and closes the producer; closing twice does nothing.
func (p *Publisher) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	return p.producer.Close()
}
