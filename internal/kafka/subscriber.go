package kafka

import (
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

// DefaultNackResendSleep is how long a subscriber waits before handing a
// nacked message to the handler again.
const DefaultNackResendSleep = 500 * time.Millisecond

// DefaultReconnectSleep is how long a subscriber waits before reconnecting
// after its consumer stopped on an error.
const DefaultReconnectSleep = time.Second

// SubscriberOption changes a subscriber built by [NewSubscriber].
type SubscriberOption func(*subscriberOptions)

type subscriberOptions struct {
	nackResendSleep time.Duration
	reconnectSleep  time.Duration
}

// WithNackResendSleep sets the pause before a nacked message (a handler's
// transient error after the router's retries) is delivered again, default
// [DefaultNackResendSleep]. The partition waits during the pause; d ≤ 0
// resends at once, which turns a persistent failure into a hot loop.
func WithNackResendSleep(d time.Duration) SubscriberOption {
	return func(o *subscriberOptions) { o.nackResendSleep = d }
}

// WithReconnectSleep sets the pause before a stopped consumer reconnects,
// default [DefaultReconnectSleep]; d ≤ 0 reconnects at once.
func WithReconnectSleep(d time.Duration) SubscriberOption {
	return func(o *subscriberOptions) { o.reconnectSleep = d }
}

// NewSubscriber returns a Watermill subscriber in consumer group group on
// brokers, using [SaramaConfig] and [Marshaler]. A nil logger logs nothing.
//
// Each Subscribe joins the group for one topic; the group's members share
// the topic's partitions, and each partition delivers one message at a time,
// the next only after the previous is acked (its offset is then committed,
// at most a second later). A nacked message is delivered again after the
// nack pause ([WithNackResendSleep]) without going back to Kafka. A new
// group starts at the oldest offset.
//
// An empty group reads every partition from the oldest offset and commits
// nothing: each Subscribe sees the whole topic again (for inspection tools).
//
// Subscribe fails when no broker answers; the channel it returns is closed
// when its context is cancelled or the subscriber is closed. Close stops
// delivery, leaves the group and returns when its consumers have stopped; a
// message handed out but not yet acked is not committed and comes back to
// whichever member owns its partition next. The other members take the
// partitions over within about a second. Subscribe and Close are safe for
// concurrent use.
func NewSubscriber(brokers []string, group string, logger watermill.LoggerAdapter, opts ...SubscriberOption) (message.Subscriber, error) {
	if len(brokers) == 0 {
		return nil, errors.New("kafka subscriber: no brokers given")
	}
	o := subscriberOptions{nackResendSleep: DefaultNackResendSleep, reconnectSleep: DefaultReconnectSleep}
	for _, opt := range opts {
		opt(&o)
	}
	sub, err := wmkafka.NewSubscriber(wmkafka.SubscriberConfig{
		Brokers:               brokers,
		Unmarshaler:           Marshaler{},
		OverwriteSaramaConfig: SaramaConfig(),
		ConsumerGroup:         group,
		NackResendSleep:       sleepOrNone(o.nackResendSleep),
		ReconnectRetrySleep:   sleepOrNone(o.reconnectSleep),
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("kafka subscriber %q on %v: %w", group, brokers, err)
	}
	return sub, nil
}

// sleepOrNone maps "no pause" to watermill-kafka's NoSleep: its zero means
// "use the default".
func sleepOrNone(d time.Duration) time.Duration {
	if d <= 0 {
		return wmkafka.NoSleep
	}
	return d
}
