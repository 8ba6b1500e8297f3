package kafka

import (
	"context"
	"fmt"

	"github.com/IBM/sarama"
)

// GroupMembers returns how many members consumer group has that hold at
// least one partition of topic: those that take its records now (a
// member that joined and waits for the next rebalance holds none). It
// opens a connection per call.
func GroupMembers(ctx context.Context, c Cluster, group, topic string) (int, error) {
	client, err := connect(ctx, c)
	if err != nil {
		return 0, err
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		_ = client.Close()
		return 0, fmt.Errorf("members of group %s: %w", group, err)
	}
	var groups []*sarama.GroupDescription
	err = withContext(ctx, func() error {
		defer admin.Close() // closes client too
		var err error
		groups, err = admin.DescribeConsumerGroups([]string{group})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("members of group %s: %w", group, err)
	}
	n := 0
	for _, g := range groups {
		if g.Err != sarama.ErrNoError {
			return 0, fmt.Errorf("members of group %s: %w", group, g.Err)
		}
		for _, m := range g.Members {
			a, err := m.GetMemberAssignment()
			if err != nil {
				return 0, fmt.Errorf("members of group %s: assignment of %s: %w", group, m.MemberId, err)
			}
			if a != nil && len(a.Topics[topic]) > 0 {
				n++
			}
		}
	}
	return n, nil
}
