// Package kafka is the Kafka plumbing every stepwise program shares: a Sarama
// configuration tuned for fast group joins, a Watermill publisher that keys
// every message by its run, a consumer-group subscriber, topic creation, a
// broker check, and a Watermill router whose middleware dead-letters
// permanent failures and retries transient ones.
//
// A worker wires it like this:
//
//	if err := kafka.Check(ctx, brokers); err != nil {
//		return err // "kafka brokers unreachable: 127.0.0.1:9092: ..."
//	}
//	names := topics.NewNames(prefix)
//	if err := kafka.EnsureTopics(ctx, brokers, names.Static(), 12); err != nil {
//		return err
//	}
//	wlog := kafka.Logger(logger)
//	pub, err := kafka.NewPublisher(brokers, wlog)
//	sub, err := kafka.NewSubscriber(brokers, "stepworker", wlog)
//	router, err := kafka.NewRouter(kafka.RouterConfig{
//		Logger:              logger,
//		DeadLetterPublisher: pub,
//		DeadLetterTopic:     names.DeadLetter(),
//	})
//	router.AddConsumerHandler("step", names.RunSteps(), sub, steps.Handle)
//	err = router.Run(ctx) // returns when ctx is cancelled and handlers are done
//
// Error handling in a handler is a choice of return value:
//
//   - nil acknowledges the message.
//   - An error for which [topics.IsPermanent] is true (malformed input,
//     [topics.Permanent]) sends the message to the dead-letter topic with the
//     error text in the [MetadataDeadLetterReason] header, and the consumer
//     goes on with the next message.
//   - Any other error is transient: retried in place with backoff
//     ([DefaultMaxRetries] times), then nacked and redelivered after the
//     subscriber's nack pause. It is never dropped and never dead-lettered.
//   - A panic is retried like a transient error; if it still panics when the
//     retries are spent, the message is dead-lettered (see [NewRouter]).
//
// Consumer-group members are dynamic by default. A process with a stable
// name (a StatefulSet pod) can set [EnvInstanceID] to be a static member, so
// that a restart after a crash takes its old partitions back without a
// rebalance. Either way, closing a subscriber leaves the group at once.
// docs/adr/0006-consumer-group-recovery.md explains the group timeouts.
//
// All messages of one run share a partition: the publisher uses the
// [topics.MetadataRunID] metadata as the Kafka key and hashes it the way
// Java clients do (murmur2), so external producers that key by run_id with
// the Kafka default partitioner agree on the partition.
package kafka
