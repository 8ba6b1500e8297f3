// Package deadletter lists the records of the dead-letter topic and
// re-drives them: publishes each back to the topic it was consumed from,
// once, after its cause has been fixed. It is what `stepwise dlq list` and
// `stepwise dlq redrive` run.
//
// Kafka holds the records; Redis remembers which were re-driven, one key
// per record (dead-letter partition and offset), so a redrive run again
// publishes nothing twice and two redrives at once share the work. A
// re-driven message that fails again goes back to the dead-letter topic as
// a new record, with its new reason, and a later redrive picks it up.
// docs/adr/0008-dead-letter-redrive.md says why it works this way.
//
//	q, err := deadletter.New(deadletter.Config{
//		Kafka: cluster, Redis: rdb, Publisher: pub, Names: names,
//	})
//	recs, err := q.List(ctx, deadletter.Filter{Since: time.Hour})
//	rep, err := q.Redrive(ctx, deadletter.Filter{Topic: "decisions"}, false)
//	err = rep.WriteText(os.Stdout)
package deadletter
