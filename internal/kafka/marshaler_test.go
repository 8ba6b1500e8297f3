package kafka_test

import (
	"testing"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/topics"
)

func TestMarshaler_keys_by_run_id_and_round_trips_metadata(t *testing.T) {
	t.Parallel()
	msg := message.NewMessage("uuid-1", []byte(`{"v":1}`))
	msg.Metadata.Set(topics.MetadataRunID, "r-7")
	msg.Metadata.Set("correlation_id", "c-1")

	rec, err := kafka.Marshaler{}.Marshal("stepwise.run-steps", msg)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	if key, _ := rec.Key.Encode(); string(key) != "r-7" {
		t.Errorf("key = %q, want r-7", key)
	}

	in := &sarama.ConsumerMessage{Topic: rec.Topic, Key: []byte("r-7")}
	in.Value, _ = rec.Value.Encode()
	for _, h := range rec.Headers {
		in.Headers = append(in.Headers, &sarama.RecordHeader{Key: h.Key, Value: h.Value})
	}
	got, err := kafka.Marshaler{}.Unmarshal(in)
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if got.UUID != "uuid-1" || string(got.Payload) != `{"v":1}` ||
		got.Metadata.Get(topics.MetadataRunID) != "r-7" || got.Metadata.Get("correlation_id") != "c-1" {
		t.Errorf("round trip gave uuid %q payload %q metadata %v", got.UUID, got.Payload, got.Metadata)
	}
}

func TestMarshaler_leaves_a_message_without_run_id_unkeyed(t *testing.T) {
	t.Parallel()
	rec, err := kafka.Marshaler{}.Marshal("t", message.NewMessage("u", []byte("x")))
	if err != nil || rec.Key != nil {
		t.Errorf("Marshal = key %v, err %v; want no key", rec.Key, err)
	}
}

func TestMarshaler_takes_run_id_and_id_of_foreign_records_from_the_record(t *testing.T) {
	t.Parallel()
	// What kcat or a Java producer sends: a key, a value, no headers.
	in := &sarama.ConsumerMessage{Topic: "stepwise.decisions", Partition: 3, Offset: 42, Key: []byte("r-9"), Value: []byte(`{}`)}
	got, err := kafka.Marshaler{}.Unmarshal(in)
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if got.Metadata.Get(topics.MetadataRunID) != "r-9" {
		t.Errorf("run_id = %q, want r-9 from the key", got.Metadata.Get(topics.MetadataRunID))
	}
	if got.UUID != "stepwise.decisions/3/42" {
		t.Errorf("UUID = %q, want stepwise.decisions/3/42", got.UUID)
	}
}
