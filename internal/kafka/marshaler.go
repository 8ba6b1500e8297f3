package kafka

import (
	"fmt"
	"strconv"

	"github.com/IBM/sarama"
	wmkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/topics"
)

// Marshaler converts between Watermill messages and Kafka records. It reads
// what watermill-kafka's DefaultMarshaler writes (metadata as Kafka headers,
// the message UUID in the "_watermill_message_uuid" header), and writes a
// record with nothing twice:
//
//   - Marshal uses the [topics.MetadataRunID] metadata as the record key, so
//     all messages of a run share a partition, and not as a header too. A
//     message without it gets no key and a random partition; that only
//     happens to messages that never belonged to a run, such as a keyless
//     payload being dead-lettered. A message without a UUID (the pipeline's
//     own, topics.NewMessage) gets no UUID header.
//   - Unmarshal fills [topics.MetadataRunID] from the record key when no
//     header carries it, and names a record without a UUID
//     "<topic>/<partition>/<offset>": where it is, which a redelivery
//     keeps. It never fails: watermill-kafka stops consuming a partition on
//     an unmarshal error, so bad records are left for the handler to reject.
//
// A header costs a producer and a consumer about seven allocations; the
// two left out were about 1.5 KB of a pipeline step. Records written before
// (with both headers) read as they did, and the records written now read
// the same on a worker that predates this.
type Marshaler struct{}

var _ wmkafka.MarshalerUnmarshaler = Marshaler{}

// Marshal implements watermill-kafka's Marshaler.
func (Marshaler) Marshal(topic string, msg *message.Message) (*sarama.ProducerMessage, error) {
	if msg.Metadata.Get(wmkafka.UUIDHeaderKey) != "" {
		return nil, fmt.Errorf("marshal message %s for %s: metadata %s is reserved for the message UUID", msg.UUID, topic, wmkafka.UUIDHeaderKey)
	}
	rec := &sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(msg.Payload)}
	n := len(msg.Metadata)
	if msg.UUID != "" {
		n++
	}
	if runID := msg.Metadata.Get(topics.MetadataRunID); runID != "" {
		rec.Key = sarama.StringEncoder(runID)
		n--
	}
	if n == 0 {
		return rec, nil
	}
	rec.Headers = make([]sarama.RecordHeader, 0, n)
	if msg.UUID != "" {
		rec.Headers = append(rec.Headers, sarama.RecordHeader{Key: []byte(wmkafka.UUIDHeaderKey), Value: []byte(msg.UUID)})
	}
	for k, v := range msg.Metadata {
		if k != topics.MetadataRunID || rec.Key == nil {
			rec.Headers = append(rec.Headers, sarama.RecordHeader{Key: []byte(k), Value: []byte(v)})
		}
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
		msg.UUID = rec.Topic + "/" + strconv.Itoa(int(rec.Partition)) + "/" + strconv.FormatInt(rec.Offset, 10)
	}
	if msg.Metadata.Get(topics.MetadataRunID) == "" && len(rec.Key) > 0 {
		msg.Metadata.Set(topics.MetadataRunID, string(rec.Key))
	}
	return msg, nil
}
