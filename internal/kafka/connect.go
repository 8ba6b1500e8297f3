package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// DefaultConnectTimeout bounds connecting to the brokers in [Check] and
// [EnsureTopics] when the context has no earlier deadline.
const DefaultConnectTimeout = 5 * time.Second

// connect returns a Sarama client on brokers, or an error wrapping
// ErrUnreachable. Network waits are bounded by the context's deadline and by
// DefaultConnectTimeout, whichever comes first; a cancelled context returns
// at once.
func connect(ctx context.Context, c Cluster) (sarama.Client, error) {
	if len(c.Brokers) == 0 {
		return nil, fmt.Errorf("%w: no brokers given", ErrUnreachable)
	}
	limit := DefaultConnectTimeout
	if dl, ok := ctx.Deadline(); ok {
		limit = min(limit, max(time.Until(dl), time.Millisecond))
	}
	cfg := c.SaramaConfig()
	cfg.Net.DialTimeout = limit
	cfg.Net.ReadTimeout = limit
	cfg.Net.WriteTimeout = limit
	cfg.Admin.Timeout = limit
	cfg.Metadata.Retry.Max = 0

	type result struct {
		client sarama.Client
		err    error
	}
	done := make(chan result, 1)
	go func() {
		c, err := sarama.NewClient(c.Brokers, cfg)
		done <- result{c, err}
	}()
	var err error
	select {
	case r := <-done:
		if r.err == nil {
			return r.client, nil
		}
		err = r.err
	case <-ctx.Done():
		go func() { // close what the abandoned attempt may still open
			if r := <-done; r.client != nil {
				_ = r.client.Close()
			}
		}()
		err = context.Cause(ctx)
	}
	return nil, fmt.Errorf("%w: %s: %w", ErrUnreachable, c, err)
}

// withContext runs fn and returns its error, or the context's cause as soon
// as ctx is done. fn keeps running in the background in that case; it must
// bound its own waits and release what it acquired.
func withContext(ctx context.Context, fn func() error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
