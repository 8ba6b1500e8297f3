package kafka

import (
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill"
	wmkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

// NewPublisher returns a Watermill publisher on brokers that keys every
// message by its run_id metadata (topics.MetadataRunID, see [Marshaler]) and
// uses [SaramaConfig]. A nil logger logs nothing.
//
// Publish is synchronous: it returns once the leader of each message's
// partition has it (acks=all), or with the first error; messages of one call
// are sent in order. It may be called from many goroutines at once. Close
// the publisher when done; Publish after Close fails.
//
// It fails at once when no broker answers.
func NewPublisher(c Cluster, logger watermill.LoggerAdapter) (message.Publisher, error) {
	if len(c.Brokers) == 0 {
		return nil, errors.New("kafka publisher: no brokers given")
	}
	pub, err := wmkafka.NewPublisher(wmkafka.PublisherConfig{
		Brokers:               c.Brokers,
		Marshaler:             Marshaler{},
		OverwriteSaramaConfig: c.SaramaConfig(),
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("kafka publisher on %s: %w", c, err)
	}
	return pub, nil
}
