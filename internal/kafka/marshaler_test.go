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

func TestMarshaler_writes_nothing_twice_and_reads_what_it_wrote(t *testing.T) {
	t.Parallel()
	msg, err := topics.NewMessage(topics.StepRequested{Header: topics.Header{V: topics.SchemaVersion, RunID: "r-7"}, Step: 2})
	if err != nil {
		t.Fatal(err)
	}
	msg.Metadata.Set(topics.MetadataTrace, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	rec, err := kafka.Marshaler{}.Marshal("stepwise.run-steps", msg)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	// The run id is the key, not a header too; a message of the pipeline
	// has no UUID to carry.
	if len(rec.Headers) != 1 || string(rec.Headers[0].Key) != topics.MetadataTrace {
		t.Errorf("headers %v, want only %s", rec.Headers, topics.MetadataTrace)
	}
	in := &sarama.ConsumerMessage{Topic: rec.Topic, Partition: 1, Offset: 9, Key: []byte("r-7")}
	in.Value, _ = rec.Value.Encode()
	for _, h := range rec.Headers {
		in.Headers = append(in.Headers, &sarama.RecordHeader{Key: h.Key, Value: h.Value})
	}
	got, _ := kafka.Marshaler{}.Unmarshal(in)
	if got.UUID != "stepwise.run-steps/1/9" || got.Metadata.Get(topics.MetadataRunID) != "r-7" ||
		got.Metadata.Get(topics.MetadataTrace) != msg.Metadata.Get(topics.MetadataTrace) || string(got.Payload) != string(msg.Payload) {
		t.Errorf("read back uuid %q metadata %v payload %s", got.UUID, got.Metadata, got.Payload)
	}
}

func TestMarshaler_refuses_metadata_that_would_be_read_as_the_UUID(t *testing.T) {
	t.Parallel()
	msg := message.NewMessage("", []byte("x"))
	msg.Metadata.Set("_watermill_message_uuid", "forged")
	if _, err := (kafka.Marshaler{}).Marshal("t", msg); err == nil {
		t.Error("Marshal took metadata named as the UUID header")
	}
}
