package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"golang.org/x/sync/errgroup"
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
// It reads every partition at once and holds the records until all are
// read, then calls fn: partitions read one after another cost a consumer
// start each (sarama batches new partitions for 100 ms), and an offset
// asked for while a partition's fetch waits for records waits behind it
// (Consumer.MaxWaitTime, 500 ms): internal/deadletter's
// BenchmarkList_300_records (3 partitions, kfake) took 1.3 s so, 0.1 s at
// once.
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
	var spans []span
	for _, p := range parts { // before any fetch is in flight
		s, err := spanOf(client, topic, p)
		if err != nil {
			return err
		}
		if s.start < s.end {
			spans = append(spans, s)
		}
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return fmt.Errorf("read %s: %w", topic, err)
	}
	defer consumer.Close()
	recs := make([][]*sarama.ConsumerMessage, len(spans))
	g, gctx := errgroup.WithContext(ctx)
	for i, s := range spans {
		g.Go(func() (err error) {
			recs[i], err = readPartition(gctx, consumer, topic, s)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, part := range recs {
		for _, m := range part {
			if err := fn(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// span is the records of a partition ReadTopic reads: offsets start to end-1.
type span struct {
	partition  int32
	start, end int64
}

// spanOf asks the brokers for partition p's oldest offset and its end.
func spanOf(client sarama.Client, topic string, p int32) (span, error) {
	start, err := client.GetOffset(topic, p, sarama.OffsetOldest)
	if err != nil {
		return span{}, fmt.Errorf("read %s/%d: oldest offset: %w", topic, p, err)
	}
	end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
	if err != nil {
		return span{}, fmt.Errorf("read %s/%d: end offset: %w", topic, p, err)
	}
	return span{partition: p, start: start, end: end}, nil
}

// readPartition returns the records of s.
func readPartition(ctx context.Context, consumer sarama.Consumer, topic string, s span) ([]*sarama.ConsumerMessage, error) {
	pc, err := consumer.ConsumePartition(topic, s.partition, s.start)
	if err != nil {
		return nil, fmt.Errorf("read %s/%d: %w", topic, s.partition, err)
	}
	defer pc.AsyncClose()
	idle := time.NewTimer(ReadIdleTimeout)
	defer idle.Stop()
	var out []*sarama.ConsumerMessage
	for {
		select {
		case m := <-pc.Messages():
			out = append(out, m)
			if m.Offset >= s.end-1 {
				return out, nil
			}
			idle.Reset(ReadIdleTimeout)
		case err := <-pc.Errors():
			return nil, fmt.Errorf("read %s/%d: %w", topic, s.partition, err)
		case <-idle.C:
			return nil, fmt.Errorf("read %s/%d: no record for %s before offset %d", topic, s.partition, ReadIdleTimeout, s.end)
		case <-ctx.Done():
			return nil, fmt.Errorf("read %s/%d: %w", topic, s.partition, context.Cause(ctx))
		}
	}
}
