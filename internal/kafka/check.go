package kafka

import (
	"context"
	"fmt"
)

// Check reports whether at least one of brokers answers a Kafka metadata
// request. Programs call it at start to fail with a clear message, such as
//
//	kafka brokers unreachable: 127.0.0.1:9092: kafka: client has run out of
//	available brokers to talk to: dial tcp 127.0.0.1:9092: connect: connection refused
//
// instead of retrying in the background. Errors wrap [ErrUnreachable]. It
// waits at most until ctx's deadline or [DefaultConnectTimeout], whichever
// is first, and returns at once when ctx is cancelled. Safe for concurrent
// use.
func Check(ctx context.Context, c Cluster) error {
	client, err := connect(ctx, c)
	if err != nil {
		return err
	}
	defer client.Close()
	if len(client.Brokers()) == 0 {
		return fmt.Errorf("%w: %s: metadata lists no brokers", ErrUnreachable, c)
	}
	return nil
}
