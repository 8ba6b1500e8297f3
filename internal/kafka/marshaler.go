package kafka

import (
	"fmt"

	"github.com/IBM/sarama"
	wmkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/topics"
)

// Marshaler converts between Watermill messages and Kafka records. It is
// watermill-kafka's DefaultMarshaler (metadata travels as Kafka headers, the
// message UUID in the "_watermill_message_uuid" header) plus the run key:
//
//   - Marshal uses the [topics.MetadataRunID] metadata as the record key, so
//     all messages of a run share a partition. A message without it gets no
//     key and a random partition; that only happens to messages that never
//     belonged to a run, such as a keyless payload being dead-lettered.
//   - Unmarshal fills [topics.MetadataRunID] from the record key when no
//     header carries it (records from kcat or other non-Watermill producers),
//     and names a record without a UUID "<topic>/<partition>/<offset>".
//     It never fails: watermill-kafka stops consuming a partition on an
//     unmarshal error, so bad records are left for the handler to reject.
//
// The zero value is ready to use and safe for concurrent use.
type Marshaler struct{}

var _ wmkafka.MarshalerUnmarshaler = Marshaler{}

// Marshal implements watermill-kafka's Marshaler.
func (Marshaler) Marshal(topic string, msg *message.Message) (*sarama.ProducerMessage, error) {
	rec, err := wmkafka.DefaultMarshaler{}.Marshal(topic, msg)
	if err != nil {
		return nil, fmt.Errorf("marshal message %s for %s: %w", msg.UUID, topic, err)
	}
	if runID := msg.Metadata.Get(topics.MetadataRunID); runID != "" {
		rec.Key = sarama.StringEncoder(runID)
	}
	return rec, nil
}

// Unmarshal implements watermill-kafka's Unmarshaler.
func (Marshaler) Unmarshal(rec *sarama.ConsumerMessage) (*message.Message, error) {
	msg, err := wmkafka.DefaultMarshaler{}.Unmarshal(rec)
	if err != nil {
		// DefaultMarshaler never fails today; keep the record rather than
		// stopping the partition if it ever does.
		msg = message.NewMessage("", rec.Value)
	}
	if msg.UUID == "" {
		msg.UUID = fmt.Sprintf("%s/%d/%d", rec.Topic, rec.Partition, rec.Offset)
	}
	if msg.Metadata.Get(topics.MetadataRunID) == "" && len(rec.Key) > 0 {
		msg.Metadata.Set(topics.MetadataRunID, string(rec.Key))
	}
	return msg, nil
}
