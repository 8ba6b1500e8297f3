package chaos

import (
	"fmt"
	"sort"

	"github.com/IBM/sarama"
)

// TopicBacklog is what a topic held when the settle time ended: its
// records, and per consumer group how many it had not consumed (lag: the
// end offset less the group's committed offset, summed over partitions;
// a partition without a committed offset counts from its start).
type TopicBacklog struct {
	Records int64            `json:"records"`
	Lag     map[string]int64 `json:"lag,omitempty"` // consumer group → records not yet consumed
	// LagByPartition lists, per group, the partitions with a lag, as
	// "partition:lag", for telling a stopped consumer from a slow one.
	LagByPartition map[string][]string `json:"lag_by_partition,omitempty"`
}

// backlog reads the records and the consumer lag of every topic under
// prefix.
func backlog(brokers []string, prefix string) (map[string]TopicBacklog, error) {
	client, err := sarama.NewClient(brokers, saramaConfig())
	if err != nil {
		return nil, fmt.Errorf("backlog: %w", err)
	}
	defer client.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, fmt.Errorf("backlog: %w", err)
	}
	// The admin shares the client; closing the client closes both.
	topics, err := stepwiseTopicsOf(client, prefix, true)
	if err != nil {
		return nil, err
	}
	groups, err := admin.ListConsumerGroups()
	if err != nil {
		return nil, fmt.Errorf("backlog: list consumer groups: %w", err)
	}
	type span struct{ start, end int64 }
	spans := map[string]map[int32]span{}
	out := map[string]TopicBacklog{}
	for _, t := range topics {
		parts, err := client.Partitions(t)
		if err != nil {
			return nil, fmt.Errorf("backlog: partitions of %s: %w", t, err)
		}
		spans[t] = map[int32]span{}
		var b TopicBacklog
		for _, p := range parts {
			start, err := client.GetOffset(t, p, sarama.OffsetOldest)
			if err != nil {
				return nil, fmt.Errorf("backlog: %s/%d: %w", t, p, err)
			}
			end, err := client.GetOffset(t, p, sarama.OffsetNewest)
			if err != nil {
				return nil, fmt.Errorf("backlog: %s/%d: %w", t, p, err)
			}
			spans[t][p] = span{start, end}
			b.Records += end - start
		}
		out[t] = b
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		offsets, err := admin.ListConsumerGroupOffsets(g, nil) // nil: every partition the group committed
		if err != nil {
			return nil, fmt.Errorf("backlog: offsets of group %s: %w", g, err)
		}
		for t, parts := range offsets.Blocks {
			b, ok := out[t]
			if !ok {
				continue
			}
			if b.Lag == nil {
				b.Lag, b.LagByPartition = map[string]int64{}, map[string][]string{}
			}
			ps := make([]int32, 0, len(spans[t]))
			for p := range spans[t] {
				ps = append(ps, p)
			}
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			for _, p := range ps {
				sp := spans[t][p]
				committed := sp.start
				if blk := parts[p]; blk != nil && blk.Offset >= 0 {
					committed = blk.Offset
				}
				if lag := sp.end - committed; lag > 0 {
					b.Lag[g] += lag
					b.LagByPartition[g] = append(b.LagByPartition[g], fmt.Sprintf("%d:%d", p, lag))
				}
			}
			out[t] = b
		}
	}
	return out, nil
}
