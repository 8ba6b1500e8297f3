package kafkacluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/IBM/sarama"
)

// waitBrokers polls each node of ids, on its own listener, until it
// answers with metadata that lists it and an elected controller, or ctx
// ends. A broker serves requests only once it has caught up with the
// metadata log, and a killed one stays listed by the others until its
// session times out, so each node is asked itself.
func (c *Cluster) waitBrokers(ctx context.Context, ids []int) error {
	cfg := sarama.NewConfig()
	cfg.ClientID = "stepwise-kafkacluster"
	cfg.Net.DialTimeout = 2 * time.Second
	cfg.Metadata.Retry.Max = 0
	for _, id := range ids {
		n := c.Nodes[slices.IndexFunc(c.Nodes, func(n Node) bool { return n.ID == id })]
		for {
			err := answers(n, cfg)
			if err == nil {
				break
			}
			if !alive(n.PID) {
				return fmt.Errorf("kafka node %d exited; see %s/server.log", n.ID, c.nodeDir(n))
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("kafka node %d (%s): not ready: %v", n.ID, n.Addr(), err)
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	return nil
}

// answers asks node n for the cluster's metadata and checks that it lists
// n and a controller.
func answers(n Node, cfg *sarama.Config) error {
	client, err := sarama.NewClient([]string{n.Addr()}, cfg)
	if err != nil {
		return err
	}
	defer client.Close()
	if _, err := client.Controller(); err != nil {
		return fmt.Errorf("no controller: %w", err)
	}
	for _, b := range client.Brokers() {
		if int(b.ID()) == n.ID {
			return nil
		}
	}
	return fmt.Errorf("broker %d is not in its own metadata yet", n.ID)
}
