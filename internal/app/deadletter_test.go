package app_test

import (
	"context"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/topics"
)

type deadLetter struct {
	sourceTopic, reason, payload string
}

// collect consumes topic in a group of its own from the start and returns
// a function that lists the dead letters received so far.
func collect(t *testing.T, stack *app.Stack, topic string) func() []deadLetter {
	t.Helper()
	sub, err := kafka.NewSubscriber(stack.Kafka, "test-"+uuid.NewString(), watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = sub.Close() })
	msgs, err := sub.Subscribe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []deadLetter
	go func() {
		for m := range msgs {
			mu.Lock()
			got = append(got, deadLetter{
				sourceTopic: m.Metadata.Get(kafka.MetadataDeadLetterTopic),
				reason:      m.Metadata.Get(kafka.MetadataDeadLetterReason),
				payload:     string(m.Payload),
			})
			mu.Unlock()
			m.Ack()
		}
	}()
	return func() []deadLetter {
		mu.Lock()
		defer mu.Unlock()
		return append([]deadLetter(nil), got...)
	}
}

// publishRaw publishes payload as it is, keyed like a run's message.
func publishRaw(t *testing.T, stack *app.Stack, topic, payload string) {
	t.Helper()
	m := message.NewMessage(watermill.NewUUID(), []byte(payload))
	m.Metadata.Set(topics.MetadataRunID, "r-garbage")
	if err := stack.Publisher.Publish(topic, m); err != nil {
		t.Fatalf("publish to %s: %v", topic, err)
	}
}
