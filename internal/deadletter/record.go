package deadletter

import (
	"fmt"
	"slices"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/topics"
)

// MetadataRedrivenFrom is the metadata key (Kafka header) a re-driven
// message carries: the dead-letter record it was re-published from, as
// "<dead-letter topic>/<partition>/<offset>". If the message fails again,
// its new dead-letter record keeps the header, so a chain of re-drives can
// be followed back.
const MetadataRedrivenFrom = "redriven_from"

// State says what has become of a dead-letter record.
type State string

// The states of a record, as recorded in Redis.
const (
	// StateDead: not re-driven (or its mark has expired).
	StateDead State = "dead"
	// StateClaimed: a redrive has claimed it and is publishing it, or
	// crashed doing so; the claim expires after the claim timeout.
	StateClaimed State = "claimed"
	// StateRedriven: re-published to its original topic.
	StateRedriven State = "redriven"
)

// Record is one message on the dead-letter topic.
type Record struct {
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Time      time.Time `json:"time"`              // when it was dead-lettered (the record's timestamp)
	Topic     string    `json:"topic"`             // the topic it was consumed from; "" when the header is missing
	Key       string    `json:"key"`               // the record's key: the run id
	Reason    string    `json:"reason"`            // the handler's error
	Handler   string    `json:"handler,omitempty"` // the handler that refused it
	// RedrivenFrom is the dead-letter record this message was re-driven
	// from before it failed again ([MetadataRedrivenFrom]); "" for a first
	// failure.
	RedrivenFrom string    `json:"redriven_from,omitempty"`
	State        State     `json:"state"`
	RedrivenAt   time.Time `json:"redriven_at,omitzero"` // when State is StateRedriven
	Payload      string    `json:"payload"`

	msg *message.Message // the record as it was read, metadata included
}

// ID names the record within its topic: "<partition>/<offset>".
func (r Record) ID() string { return fmt.Sprintf("%d/%d", r.Partition, r.Offset) }

// decode reads a dead-letter record the way stepwise's consumers read
// records, with internal/kafka's Marshaler, so the run id falls back to
// the key as it does for them.
func decode(rec *sarama.ConsumerMessage) (Record, error) {
	msg, err := kafka.Marshaler{}.Unmarshal(rec)
	if err != nil {
		return Record{}, fmt.Errorf("decode %s/%d/%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
	}
	key := string(rec.Key)
	if key == "" {
		key = msg.Metadata.Get(topics.MetadataRunID)
	}
	return Record{
		Partition:    rec.Partition,
		Offset:       rec.Offset,
		Time:         rec.Timestamp,
		Topic:        msg.Metadata.Get(kafka.MetadataDeadLetterTopic),
		Key:          key,
		Reason:       msg.Metadata.Get(kafka.MetadataDeadLetterReason),
		Handler:      msg.Metadata.Get(kafka.MetadataDeadLetterHandler),
		RedrivenFrom: msg.Metadata.Get(MetadataRedrivenFrom),
		State:        StateDead,
		Payload:      string(msg.Payload),
		msg:          msg,
	}, nil
}

// deadLetterKeys are the metadata keys the router added when it
// dead-lettered the message; a re-driven message goes without them.
var deadLetterKeys = []string{
	kafka.MetadataDeadLetterReason, kafka.MetadataDeadLetterTopic,
	kafka.MetadataDeadLetterHandler, kafka.MetadataDeadLetterSubscriber,
}

// redriven is the message to publish to r.Topic again: the same payload,
// UUID and metadata (so the same key, run_id, and trace context) without
// the dead-letter keys, plus [MetadataRedrivenFrom] naming r on
// deadLetterTopic.
func (r Record) redriven(deadLetterTopic string) *message.Message {
	m := message.NewMessage(r.msg.UUID, r.msg.Payload)
	for k, v := range r.msg.Metadata {
		if !slices.Contains(deadLetterKeys, k) {
			m.Metadata.Set(k, v)
		}
	}
	m.Metadata.Set(MetadataRedrivenFrom, deadLetterTopic+"/"+r.ID())
	return m
}
