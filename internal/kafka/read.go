package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// ReadIdleTimeout bounds how long [ReadTopic] waits for the next record of
// a partition it knows is there before it gives up on the read.
const ReadIdleTimeout = 10 * time.Second

// ReadTopic calls fn with every record of topic, partition after partition,
// each from its oldest record still kept up to its end as it stands when
// ReadTopic looks at it (its high-water mark): a bounded scan, not a
// subscription, and no consumer group, so no offsets are committed. Records
// published while it reads may or may not be included. fn's error stops the
// read and is returned as it is.
//
// An unreachable cluster fails within [DefaultConnectTimeout] (or ctx's
// earlier deadline) with an error wrapping [ErrUnreachable]; a topic that
// does not exist is an error; a partition that stops delivering before its
// end fails after [ReadIdleTimeout]. A cancelled ctx stops the read with
// its cause.
func ReadTopic(ctx context.Context, c Cluster, topic string, fn func(*sarama.ConsumerMessage) error) error {
	client, err := connect(ctx, c)
	if err != nil {
		return fmt.Errorf("read %s: %w", topic, err)
	}
	defer client.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		return fmt.Errorf("read %s: partitions: %w", topic, err)
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return fmt.Errorf("read %s: %w", topic, err)
	}
	defer consumer.Close()
	for _, p := range parts {
		if err := readPartition(ctx, client, consumer, topic, p, fn); err != nil {
			return err
		}
	}
	return nil
}

// readPartition is ReadTopic for one partition.
func readPartition(ctx context.Context, client sarama.Client, consumer sarama.Consumer, topic string, p int32, fn func(*sarama.ConsumerMessage) error) error {
	start, err := client.GetOffset(topic, p, sarama.OffsetOldest)
	if err != nil {
		return fmt.Errorf("read %s/%d: oldest offset: %w", topic, p, err)
	}
	end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
	if err != nil {
		return fmt.Errorf("read %s/%d: end offset: %w", topic, p, err)
	}
	if start >= end {
		return nil
	}
	pc, err := consumer.ConsumePartition(topic, p, start)
	if err != nil {
		return fmt.Errorf("read %s/%d: %w", topic, p, err)
	}
	defer pc.AsyncClose()
	idle := time.NewTimer(ReadIdleTimeout)
	defer idle.Stop()
	for {
		select {
		case m := <-pc.Messages():
			if err := fn(m); err != nil {
				return err
			}
			if m.Offset >= end-1 {
				return nil
			}
			idle.Reset(ReadIdleTimeout)
		case err := <-pc.Errors():
			return fmt.Errorf("read %s/%d: %w", topic, p, err)
		case <-idle.C:
			return fmt.Errorf("read %s/%d: no record for %s before offset %d", topic, p, ReadIdleTimeout, end)
		case <-ctx.Done():
			return fmt.Errorf("read %s/%d: %w", topic, p, context.Cause(ctx))
		}
	}
}
