package topics

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/segmentio/encoding/json"
)

// ErrMalformed marks a payload that can never be handled: not JSON, the wrong
// shape, or failing validation. Handlers send such messages to the dead-letter
// topic instead of retrying them.
var ErrMalformed = errors.New("malformed message")

// MetadataRunID is the message metadata key that holds the run id; the Kafka
// marshaler uses it as the partition key.
const MetadataRunID = "run_id"

// MetadataTrace is the metadata (Kafka header) carrying the W3C trace
// context of the run the message belongs to (package tracing); absent when
// tracing is off.
const MetadataTrace = "traceparent"

// Message is what every message kind implements.
type Message interface {
	Validate() error
	key() string
}

// Encode returns the JSON of m with its schema version set.
func Encode[M Message](m M) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("encode %T: %w", m, err)
	}
	// Every kind embeds Header, so "v" is present; it is this build's.
	h, ok := any(&m).(versioned)
	if !ok {
		return nil, fmt.Errorf("encode %T: it does not embed Header", m)
	}
	h.setVersion()
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", m, err)
	}
	return b, nil
}

// versioned is a message whose Header's version Encode sets.
type versioned interface{ setVersion() }

func (h *Header) setVersion() { h.V = SchemaVersion }

// Decode parses and validates a payload. Every failure wraps ErrMalformed and
// says what is wrong. A missing "v" reads as version 1. A Decision is
// checked with CheckText first, as a RunRequested is.
func Decode[M Message](payload []byte) (M, error) {
	var m M
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return m, fmt.Errorf("%w: %T: payload is not a JSON object", ErrMalformed, m)
	}
	if tooDeep(trimmed) {
		return m, fmt.Errorf("%w: %T: JSON nested more than %d deep", ErrMalformed, m, maxDepth)
	}
	if _, outside := any(m).(fromOutside); outside {
		if err := CheckText(trimmed); err != nil {
			return m, fmt.Errorf("%w: %T: %v", ErrMalformed, m, err)
		}
	}
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return m, fmt.Errorf("%w: %T: %v", ErrMalformed, m, err)
	}
	if err := m.Validate(); err != nil {
		return m, fmt.Errorf("%w: %T: %v", ErrMalformed, m, err)
	}
	return m, nil
}

// fromOutside is a message other systems publish, which Decode holds to
// CheckText: a key twice or bytes that are not UTF-8 would be read one way
// here and another way by the system that wrote it. stepwise's own
// messages are written by encoding/json and skip the walk. Decision and
// RunRequested are.
type fromOutside interface{ fromOutside() }

func (Decision) fromOutside() {}

// maxDepth is how deep encoding/json lets JSON nest. segmentio's decoder
// has no such bound: it took 0.35 s to skip a 1 MB payload of brackets that
// encoding/json refuses at once, and it must not take what encoding/json
// refuses (ADR 0026).
const maxDepth = 10000

// tooDeep reports whether b, JSON or not, opens more than maxDepth arrays
// and objects at once outside its strings: one pass, no allocation.
func tooDeep(b []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > maxDepth {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}

// NewMessage encodes m into a Watermill message keyed by its run. It has no
// UUID: the message is named by where its record lands (kafka.Marshaler),
// and what it is about by its payload.
func NewMessage[M Message](m M) (*message.Message, error) {
	b, err := Encode(m)
	if err != nil {
		return nil, err
	}
	msg := message.NewMessage("", b)
	msg.Metadata.Set(MetadataRunID, m.key())
	return msg, nil
}

// Publisher is the one method of a Watermill publisher that Publish needs.
type Publisher interface {
	Publish(topic string, messages ...*message.Message) error
}

// Publish encodes m and publishes it to topic, keyed by its run.
func Publish[M Message](pub Publisher, topic string, m M) error {
	return PublishTraced(pub, topic, m, "")
}

// PublishTraced is Publish with the trace context traceparent in the
// message's MetadataTrace ("" for none).
func PublishTraced[M Message](pub Publisher, topic string, m M, traceparent string) error {
	msg, err := NewMessage(m)
	if err != nil {
		return err
	}
	if traceparent != "" {
		msg.Metadata.Set(MetadataTrace, traceparent)
	}
	if err := pub.Publish(topic, msg); err != nil {
		return fmt.Errorf("publish %T to %s: %w", m, topic, err)
	}
	return nil
}
