package kafka

import (
	"context"
	"fmt"

	"github.com/IBM/sarama"
)

// PartitionLag is how far a consumer group is behind on one partition:
// the partition's end offset less the group's committed offset (the whole
// partition when the group has committed nothing).
type PartitionLag struct {
	Topic     string
	Partition int32
	Lag       int64
}

// Lag reads group's lag on every partition of topics, as autoscalers (KEDA's
// kafka scaler) compute it. It opens a connection per call: it is meant
// for a metrics scrape, not a hot path.
func Lag(ctx context.Context, c Cluster, group string, topics []string) ([]PartitionLag, error) {
	client, err := connect(ctx, c)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, fmt.Errorf("lag of group %s: %w", group, err)
	}
	parts := map[string][]int32{}
	for _, t := range topics {
		ps, err := client.Partitions(t)
		if err != nil {
			return nil, fmt.Errorf("lag of group %s: partitions of %s: %w", group, t, err)
		}
		parts[t] = ps
	}
	var out []PartitionLag
	err = withContext(ctx, func() error {
		committed, err := admin.ListConsumerGroupOffsets(group, parts)
		if err != nil {
			return err
		}
		for _, t := range topics {
			for _, p := range parts[t] {
				end, err := client.GetOffset(t, p, sarama.OffsetNewest)
				if err != nil {
					return fmt.Errorf("end of %s/%d: %w", t, p, err)
				}
				at := int64(0)
				if b := committed.GetBlock(t, p); b != nil && b.Offset >= 0 {
					at = b.Offset
				}
				out = append(out, PartitionLag{Topic: t, Partition: p, Lag: max(end-at, 0)})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lag of group %s: %w", group, err)
	}
	return out, nil
}
