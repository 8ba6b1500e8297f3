package kafka

import (
	"time"

	"github.com/IBM/sarama"
)

// ClientID is the client id stepwise programs present to the brokers.
const ClientID = "stepwise"

// SaramaConfig returns a new Sarama configuration for stepwise clients. The
// caller owns the result and may change it before use.
//
// Against Sarama's defaults it changes:
//   - Consumer.Offsets.Initial = OffsetOldest: a new group reads a topic from
//     its start, so nothing published before the first consumer is lost.
//   - Consumer.Group.Rebalance.Retry.Backoff = 100ms (default 2s): a group
//     join takes ~0.2s instead of ~2s.
//   - Consumer.Group.Heartbeat.Interval = 500ms (default 3s) and
//     Consumer.Group.Session.Timeout = 6s (default 10s, and the smallest a
//     stock broker accepts): members learn of a rebalance within half a
//     second and a crashed member's partitions move after 6s.
//   - Consumer.Group.Rebalance.Timeout = 3s (default 60s): how long the
//     coordinator waits for the members to rejoin once a rebalance starts;
//     a member that has not rejoined by then (a dead one, or one stuck in a
//     handler) is left out of the new generation and joins the next one.
//     It must stay below Net.ReadTimeout (30s), because Sarama waits for a
//     JoinGroup answer no longer than that: with the 60s default a
//     coordinator waiting for a slow member outlasts the read, the client
//     gives up on the join with an i/o timeout and the rebalance starts
//     over. It stays below the session timeout too: kfake expires a member
//     whose JoinGroup has waited a session timeout since its last heartbeat
//     and never answers that JoinGroup, and on Kafka it ends a rebalance
//     that waits for a crashed member before that member's session would.
//     Handlers ack at once (ADR 0002), so 3s is ample to rejoin.
//   - Producer.Return.Successes (needed by the sync producer),
//     Producer.RequiredAcks = WaitForAll, and the murmur2 partitioner
//     ([NewPartitioner]).
//   - Version = 3.0.0: understood by kfake, by Kafka 3.x and by Kafka 4,
//     which dropped the protocol versions older than 2.1 that Sarama's
//     default speaks. ClientID = [ClientID].
//
// Consumer.Group.InstanceId (static membership) is left empty: it must
// differ per process and per subscription, so [NewSubscriber] sets it
// from [EnvInstanceID]. docs/adr/0006-consumer-group-recovery.md has the
// measurements behind these values.
func SaramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	cfg.ClientID = ClientID

	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Rebalance.Timeout = 3 * time.Second

	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = NewPartitioner
	return cfg
}
