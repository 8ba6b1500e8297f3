// Package topics is the Kafka contract of stepwise: topic names under a
// configurable prefix, one struct per message kind with a schema version,
// encoding and validating decoding, and the partition key (always run_id).
//
//	names := topics.NewNames("stepwise.")
//	msg, err := topics.NewMessage(topics.StepRequested{Header: topics.Header{RunID: "r-1"}, Step: 0})
//	err = publisher.Publish(names.RunSteps(), msg)
//
//	req, err := topics.Decode[topics.StepRequested](msg.Payload)
//	if errors.Is(err, topics.ErrMalformed) { /* dead-letter it */ }
//
// Golden payloads in testdata/ are bytes that older versions wrote; they must
// keep decoding.
package topics
