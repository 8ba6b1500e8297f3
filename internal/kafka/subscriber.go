package kafka

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/IBM/sarama"
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

// EnvInstanceID names the environment variable that turns on static group
// membership for the subscribers of a process (see [WithInstanceID]). Set
// it to a name that is unique among the processes that share a consumer
// group and that the same process gets back when it restarts, such as a
// Kubernetes StatefulSet pod name. Unset or empty: dynamic membership.
const EnvInstanceID = "STEPWISE_INSTANCE_ID"

// SubscriberOption changes a subscriber built by [NewSubscriber].
type SubscriberOption func(*subscriberOptions)

type subscriberOptions struct {
	nackResendSleep time.Duration
	reconnectSleep  time.Duration
	instanceID      string
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

// WithInstanceID makes the subscriber a static member of its consumer group
// (KIP-345) under id, overriding [EnvInstanceID]; "" means dynamic
// membership. Each Subscribe joins as instance "<id>.<topic>" (a second
// Subscribe to the same topic as "<id>.<topic>.2", and so on), so id must
// be unique among the processes of the group and stable across restarts of
// one process; ids, topics and suffix together must make a valid Kafka
// group.instance.id (at most 249 characters of [a-zA-Z0-9._-]).
//
// A static member that restarts within the session timeout takes its old
// place, and its old partitions, without a rebalance; a dynamic one joins
// as a new member and the group rebalances twice (once when the dead
// member's session times out, once for the new member). The price: a
// process that dies for good keeps its partitions unconsumed for a session
// timeout, and two live processes with the same id fence each other.
// [Subscriber.Close] still leaves the group at once.
func WithInstanceID(id string) SubscriberOption {
	return func(o *subscriberOptions) { o.instanceID = id }
}

// Subscriber is the consumer-group subscriber [NewSubscriber] returns.
type Subscriber struct {
	cluster Cluster
	group   string
	logger  watermill.LoggerAdapter
	opts    subscriberOptions

	mu        sync.Mutex
	closed    bool
	subs      []*wmkafka.Subscriber
	instances []string       // static instance IDs in use, for Close
	perTopic  map[string]int // Subscribe calls per topic, for instance IDs
}

var _ message.Subscriber = (*Subscriber)(nil)

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
// Membership is dynamic unless [EnvInstanceID] is set in the environment or
// [WithInstanceID] is given; it fails at once when the instance ID is
// invalid. An empty group reads every partition from the oldest offset and
// commits nothing: each Subscribe sees the whole topic again (for inspection
// tools); it has no membership.
//
// Subscribe fails when no broker answers; the channel it returns is closed
// when its context is cancelled or the subscriber is closed. Close stops
// delivery, leaves the group (a LeaveGroup for each Subscribe, static ones
// included) and returns when its consumers have stopped; a message handed
// out but not yet acked is not committed and comes back to whichever member
// owns its partition next. The other members take the partitions over in
// the rebalance the LeaveGroup starts, within about a second, instead of
// after a session timeout. Subscribe and Close are safe for concurrent use.
func NewSubscriber(c Cluster, group string, logger watermill.LoggerAdapter, opts ...SubscriberOption) (message.Subscriber, error) {
	if len(c.Brokers) == 0 {
		return nil, errors.New("kafka subscriber: no brokers given")
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	o := subscriberOptions{
		nackResendSleep: DefaultNackResendSleep,
		reconnectSleep:  DefaultReconnectSleep,
		instanceID:      os.Getenv(EnvInstanceID),
	}
	for _, opt := range opts {
		opt(&o)
	}
	if group == "" {
		o.instanceID = ""
	}
	if o.instanceID != "" {
		cfg := c.SaramaConfig()
		cfg.Consumer.Group.InstanceId = o.instanceID
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("kafka subscriber %q: instance id %q: %w", group, o.instanceID, err)
		}
	}
	return &Subscriber{cluster: c, group: group, logger: logger, opts: o, perTopic: map[string]int{}}, nil
}

// Subscribe joins the group for topic; see [NewSubscriber].
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	sub, err := s.add(topic)
	if err != nil {
		return nil, err
	}
	msgs, err := sub.Subscribe(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("kafka subscriber %q on %s: %w", s.group, topic, err)
	}
	return msgs, nil
}

// add builds the Watermill subscriber for one Subscribe to topic, with its
// own static instance ID when membership is static.
func (s *Subscriber) add(topic string) (*wmkafka.Subscriber, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("kafka subscriber %q: closed", s.group)
	}
	cfg := s.cluster.SaramaConfig()
	instance := ""
	if s.opts.instanceID != "" {
		s.perTopic[topic]++
		instance = s.opts.instanceID + "." + topic
		if n := s.perTopic[topic]; n > 1 {
			instance += fmt.Sprint(".", n)
		}
		cfg.Consumer.Group.InstanceId = instance
	}
	sub, err := wmkafka.NewSubscriber(wmkafka.SubscriberConfig{
		Brokers:               s.cluster.Brokers,
		Unmarshaler:           Marshaler{},
		OverwriteSaramaConfig: cfg,
		ConsumerGroup:         s.group,
		NackResendSleep:       sleepOrNone(s.opts.nackResendSleep),
		ReconnectRetrySleep:   sleepOrNone(s.opts.reconnectSleep),
	}, s.logger)
	if err != nil {
		return nil, fmt.Errorf("kafka subscriber %q on %s: %w", s.group, s.cluster, err)
	}
	s.subs = append(s.subs, sub)
	if instance != "" {
		s.instances = append(s.instances, instance)
	}
	return sub, nil
}

// Close stops every Subscribe, leaves the group and waits for the
// consumers to stop; see [NewSubscriber]. Calling it again does nothing.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	subs, instances := s.subs, s.instances
	s.mu.Unlock()

	// In parallel: each one's consumer leaves the group as it stops.
	errs := make([]error, len(subs)+1)
	var wg sync.WaitGroup
	for i, sub := range subs {
		wg.Go(func() { errs[i] = sub.Close() })
	}
	wg.Wait()
	// Sarama does not send LeaveGroup for a static member (KIP-345
	// leaves that to the operator); send it by instance ID.
	if len(instances) > 0 {
		errs[len(subs)] = s.leave(instances)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close kafka subscriber %q: %w", s.group, err)
	}
	return nil
}

// leave removes the static members instances from the group.
func (s *Subscriber) leave(instances []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultConnectTimeout)
	defer cancel()
	client, err := connect(ctx, s.cluster)
	if err != nil {
		return fmt.Errorf("leave group: %w", err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		_ = client.Close()
		return fmt.Errorf("leave group: %w", err)
	}
	return withContext(ctx, func() error {
		defer admin.Close() // closes client too
		if _, err := admin.RemoveMemberFromConsumerGroup(s.group, instances); err != nil {
			return fmt.Errorf("leave group as %v: %w", instances, err)
		}
		return nil
	})
}

// sleepOrNone maps "no pause" to watermill-kafka's NoSleep: its zero means
// "use the default".
func sleepOrNone(d time.Duration) time.Duration {
	if d <= 0 {
		return wmkafka.NoSleep
	}
	return d
}
