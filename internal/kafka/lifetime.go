package kafka

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/IBM/sarama"
)

// RecordLifetime returns how long the brokers may keep a record of topic
// after it was written: the topic's retention.ms plus its segment.ms,
// because Kafka deletes a log segment whole, once the newest record in it
// is older than the retention, so the oldest record of a segment can
// outlive the retention by up to the time a segment stays open. unlimited
// is true when retention.ms is -1 (records are kept until deleted by hand);
// the duration is then 0.
//
// It asks the brokers (DescribeConfigs), so it sees a topic's own settings
// as well as the broker defaults. Errors wrap [ErrUnreachable] when no
// broker answers within [DefaultConnectTimeout] (or ctx's earlier deadline).
func RecordLifetime(ctx context.Context, c Cluster, topic string) (lifetime time.Duration, unlimited bool, err error) {
	client, err := connect(ctx, c)
	if err != nil {
		return 0, false, fmt.Errorf("lifetime of %s: %w", topic, err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		_ = client.Close()
		return 0, false, fmt.Errorf("lifetime of %s: cluster admin: %w", topic, err)
	}
	var entries []sarama.ConfigEntry
	err = withContext(ctx, func() error {
		defer admin.Close() // closes client too
		var err error
		entries, err = admin.DescribeConfig(sarama.ConfigResource{
			Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"retention.ms", "segment.ms"},
		})
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("lifetime of %s: describe configs: %w", topic, err)
	}
	ms := map[string]int64{}
	for _, e := range entries {
		v, err := strconv.ParseInt(e.Value, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("lifetime of %s: %s is %q: %w", topic, e.Name, e.Value, err)
		}
		ms[e.Name] = v
	}
	retention, okR := ms["retention.ms"]
	segment, okS := ms["segment.ms"]
	switch {
	case !okR || !okS:
		return 0, false, fmt.Errorf("lifetime of %s: the brokers did not report retention.ms and segment.ms", topic)
	case retention < 0:
		return 0, true, nil
	}
	return time.Duration(retention+segment) * time.Millisecond, false, nil
}
