package app

import (
	"context"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/stepwise-run/stepwise/internal/kafka"
)

// transport is what carries the work: Kafka in every program, an in-process
// channel in benchmarks that measure the pipeline without a broker.
type transport interface {
	subscriber(group string) (message.Subscriber, error)
	ensureTopics(ctx context.Context, topics []string) error
	ready(ctx context.Context) error
}

type kafkaTransport struct {
	cluster    kafka.Cluster
	partitions int32
	logger     watermill.LoggerAdapter
}

func (k kafkaTransport) subscriber(group string) (message.Subscriber, error) {
	return kafka.NewSubscriber(k.cluster, group, k.logger)
}

func (k kafkaTransport) ensureTopics(ctx context.Context, topics []string) error {
	return kafka.EnsureTopics(ctx, k.cluster, topics, k.partitions)
}

func (k kafkaTransport) ready(ctx context.Context) error { return kafka.Check(ctx, k.cluster) }

// channelTransport is one in-process Go channel pub/sub. It has no consumer
// groups: every subscriber of a topic gets every message.
type channelTransport struct{ ch *gochannel.GoChannel }

func (c channelTransport) subscriber(string) (message.Subscriber, error) { return unclosing{c.ch}, nil }
func (c channelTransport) ensureTopics(context.Context, []string) error  { return nil }
func (c channelTransport) ready(context.Context) error                   { return nil }

// unclosing keeps a router from closing the channel that all components
// share; the stack closes it.
type unclosing struct{ *gochannel.GoChannel }

func (unclosing) Close() error { return nil }
