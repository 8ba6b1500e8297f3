package kafka_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/embedded"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/topics"
)

func Example() {
	broker, err := embedded.StartKafka("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer broker.Close()
	brokers := broker.Addrs()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := kafka.Check(ctx, kafka.Plain(brokers...)); err != nil {
		panic(err)
	}
	names := topics.NewNames("example.")
	if err := kafka.EnsureTopics(ctx, kafka.Plain(brokers...), names.Static(), 4); err != nil {
		panic(err)
	}

	wlog := watermill.NopLogger{}
	pub, err := kafka.NewPublisher(kafka.Plain(brokers...), wlog)
	if err != nil {
		panic(err)
	}
	defer pub.Close()
	sub, err := kafka.NewSubscriber(kafka.Plain(brokers...), "example-stepworker", wlog)
	if err != nil {
		panic(err)
	}
	router, err := kafka.NewRouter(kafka.RouterConfig{
		Logger:              slog.New(slog.DiscardHandler),
		DeadLetterPublisher: pub,
		DeadLetterTopic:     names.DeadLetter(),
	})
	if err != nil {
		panic(err)
	}
	handled := make(chan struct{})
	router.AddConsumerHandler("steps", names.RunSteps(), sub, func(msg *message.Message) error {
		req, err := topics.Decode[topics.StepRequested](msg.Payload)
		if err != nil {
			return err // malformed: dead-lettered with the reason
		}
		fmt.Printf("run %s step %d, key %s\n", req.RunID, req.Step, msg.Metadata.Get(topics.MetadataRunID))
		close(handled)
		return nil
	})
	stopped := make(chan error, 1)
	go func() { stopped <- router.Run(ctx) }()

	msg, err := topics.NewMessage(topics.StepRequested{Header: topics.Header{RunID: "r-1"}, Step: 0})
	if err != nil {
		panic(err)
	}
	if err := pub.Publish(names.RunSteps(), msg); err != nil {
		panic(err)
	}
	<-handled
	cancel()
	if err := <-stopped; err != nil {
		panic(err)
	}
	// Output: run r-1 step 0, key r-1
}
