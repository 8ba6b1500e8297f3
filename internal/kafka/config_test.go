package kafka_test

import (
	"testing"

	"github.com/stepwise-run/stepwise/internal/kafka"
)

// A JoinGroup may wait the whole rebalance timeout for its answer, and
// Sarama gives up on a read after Net.ReadTimeout; kfake drops a member
// whose JoinGroup waited a session timeout. See ADR 0006.
func TestSaramaConfig_rebalance_timeout_is_below_the_session_and_read_timeouts(t *testing.T) {
	t.Parallel()
	cfg := kafka.SaramaConfig()
	rebalance, session, read := cfg.Consumer.Group.Rebalance.Timeout, cfg.Consumer.Group.Session.Timeout, cfg.Net.ReadTimeout
	if rebalance >= session || rebalance >= read {
		t.Errorf("rebalance timeout %v, want below the session timeout %v and the read timeout %v", rebalance, session, read)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
