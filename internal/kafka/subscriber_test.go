package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/kafka"
)

func TestSubscriber_Close_leaves_the_group_before_it_returns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		stay, exit []kafka.SubscriberOption
	}{
		{name: "dynamic members"},
		{
			name: "static members",
			stay: []kafka.SubscriberOption{kafka.WithInstanceID("stay")},
			exit: []kafka.SubscriberOption{kafka.WithInstanceID("exit")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := unique(t, "in")
			s := newStack(t, 4, in)
			group := unique(t, "group")
			stay := consume(t, s.subscriber(t, group, tc.stay...), in)
			leaving := s.subscriber(t, group, tc.exit...)
			gone := consume(t, leaving, in)

			// Until both members have joined, one may hold every
			// partition: keep publishing until each has handled something.
			i := 0
			eventually(t, 10*time.Second, "both members handle messages", func() bool {
				s.publish(t, in, fmt.Sprint("warm-", i), "warm-up")
				i++
				return stay.len() > 0 && gone.len() > 0
			})

			if err := leaving.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			// No waiting for a session timeout: the member is gone when
			// Close returns.
			if n := groupMembers(t, s.brokers, group); n != 1 {
				t.Fatalf("group has %d members after Close, want 1", n)
			}

			// The other member takes every partition over (and may see a
			// message twice: delivery is at least once).
			const n = 40
			for i := range n {
				s.publish(t, in, fmt.Sprint("run-", i), "after")
			}
			got := func() int {
				ids := map[string]bool{}
				for _, m := range stay.all() {
					if m.payload == "after" {
						ids[m.metadata.Get("run_id")] = true
					}
				}
				return len(ids)
			}
			deadline := time.Now().Add(10 * time.Second)
			for got() < n {
				if time.Now().After(deadline) {
					t.Fatalf("after 10s the remaining member has handled %d of %d messages; group %s",
						got(), n, describeGroup(s.brokers, group))
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func TestNewSubscriber_refuses_an_invalid_instance_id(t *testing.T) {
	t.Parallel()
	_, err := kafka.NewSubscriber(kafka.Plain("127.0.0.1:9"), "group", wlog, kafka.WithInstanceID("pod/1"))
	if err == nil || !strings.Contains(err.Error(), "pod/1") {
		t.Fatalf("NewSubscriber with instance id pod/1: err = %v, want an error naming it", err)
	}
}

// consume subscribes sub to topic and acks every message into a recorder
// until the test ends or sub is closed.
func consume(t testing.TB, sub message.Subscriber, topic string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	msgs, err := sub.Subscribe(ctx, topic)
	if err != nil {
		t.Fatalf("Subscribe(%s): %v", topic, err)
	}
	rec := &recorder{}
	go func() {
		for msg := range msgs {
			rec.add(msg)
			msg.Ack()
		}
	}()
	return rec
}

// groupMembers returns how many members the coordinator lists for group.
func groupMembers(t testing.TB, brokers []string, group string) int {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(brokers, kafka.SaramaConfig())
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer admin.Close()
	ds, err := admin.DescribeConsumerGroups([]string{group})
	if err != nil || len(ds) != 1 {
		t.Fatalf("describe group %s: %v", group, err)
	}
	return len(ds[0].Members)
}
