package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/IBM/sarama"
)

// topicReadyTimeout bounds the wait for created topics to show up in the
// cluster metadata when the context has no deadline.
const topicReadyTimeout = 10 * time.Second

// EnsureTopics creates those of names that do not exist on brokers, each
// with the given number of partitions (≥ 1) and a replication factor of
// three (min.insync.replicas 2), or the number of brokers when the cluster
// has fewer. The topics named in compacted are created too, with
// cleanup.policy=compact and no time retention: the broker keeps the last
// record of each key for good.
// Existing
// topics are left as they are, whatever their partition count, so calling it
// again, or from several programs at once, is harmless.
//
// It returns once every created topic has a leader for each partition, so
// publishing and subscribing may start at once. Problems with single topics
// are joined into one error. An unreachable cluster fails within
// [DefaultConnectTimeout] (or ctx's earlier deadline) with an error wrapping
// [ErrUnreachable]; a cancelled ctx returns at once.
func EnsureTopics(ctx context.Context, c Cluster, names []string, partitions int32, compacted ...string) error {
	if partitions < 1 {
		return fmt.Errorf("ensure topics: %d partitions, want ≥ 1", partitions)
	}
	names = slices.Compact(slices.Sorted(slices.Values(slices.Concat(names, compacted))))
	if len(names) == 0 {
		return nil
	}
	client, err := connect(ctx, c)
	if err != nil {
		return fmt.Errorf("ensure topics: %w", err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		_ = client.Close()
		return fmt.Errorf("ensure topics: cluster admin on %s: %w", c, err)
	}
	err = withContext(ctx, func() error {
		defer admin.Close() // closes client too
		return ensureTopics(ctx, admin, len(client.Brokers()), names, partitions, compacted)
	})
	if err != nil {
		return fmt.Errorf("ensure topics on %s: %w", c, err)
	}
	return nil
}

func ensureTopics(ctx context.Context, admin sarama.ClusterAdmin, nbrokers int, names []string, partitions int32, compacted []string) error {
	existing, err := admin.ListTopics()
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	var created []string
	var errs []error
	for _, name := range names {
		if _, ok := existing[name]; ok {
			continue
		}
		err := admin.CreateTopic(name, topicDetail(nbrokers, partitions, slices.Contains(compacted, name)), false)
		switch {
		case err == nil:
			created = append(created, name)
		case errors.Is(err, sarama.ErrTopicAlreadyExists):
			// created by someone else in between: fine
		default:
			errs = append(errs, fmt.Errorf("create topic %s: %w", name, err))
		}
	}
	if len(created) > 0 {
		errs = append(errs, waitForTopics(ctx, admin, created))
	}
	return errors.Join(errs...)
}

// topicDetail is how a topic is created on a cluster of nbrokers: three
// replicas, or as many as there are brokers, and with three replicas
// min.insync.replicas = 2, so that a write acknowledged with acks=all is on
// two brokers and one broker down stops nothing; compact keeps the last
// record of each key for good (cleanup.policy=compact, retention.ms=-1)
// instead of a time's worth.
func topicDetail(nbrokers int, partitions int32, compact bool) *sarama.TopicDetail {
	rf := max(1, min(3, nbrokers))
	d := &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: int16(rf), ConfigEntries: map[string]*string{}}
	if rf == 3 {
		two := "2"
		d.ConfigEntries["min.insync.replicas"] = &two
	}
	if compact {
		policy, forever := "compact", "-1"
		d.ConfigEntries["cleanup.policy"] = &policy
		d.ConfigEntries["retention.ms"] = &forever // what compact means on Kafka; kfake would apply 7 days
	}
	return d
}

// waitForTopics polls the metadata until every topic of names has a leader
// for each of its partitions.
func waitForTopics(ctx context.Context, admin sarama.ClusterAdmin, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, topicReadyTimeout)
	defer cancel()
	for {
		pending, err := unreadyTopics(admin, names)
		if err == nil && len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("wait for new topics: %w", err)
			}
			return fmt.Errorf("new topics %v have no leader yet: %w", pending, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func unreadyTopics(admin sarama.ClusterAdmin, names []string) ([]string, error) {
	meta, err := admin.DescribeTopics(names)
	if err != nil {
		return nil, err
	}
	var pending []string
	for _, t := range meta {
		ready := errors.Is(t.Err, sarama.ErrNoError) && len(t.Partitions) > 0
		for _, p := range t.Partitions {
			ready = ready && errors.Is(p.Err, sarama.ErrNoError) && p.Leader >= 0
		}
		if !ready {
			pending = append(pending, t.Name)
		}
	}
	if len(meta) < len(names) {
		return names, nil
	}
	return pending, nil
}
