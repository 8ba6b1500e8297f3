package config

import (
	"fmt"

	"github.com/stepwise-run/stepwise/topics"
)

// maxTopicLen is Kafka's limit on a topic name.
const maxTopicLen = 249

// Kafka holds the settings of the topics stepwise uses. Broker addresses are
// not here: they come from --kafka or STEPWISE_KAFKA_BROKERS.
type Kafka struct {
	// TopicPrefix is put before every topic name; default topics.DefaultPrefix
	// ("stepwise.").
	TopicPrefix string `json:"topic_prefix,omitempty"`
	// Partitions is the partition count of topics stepwise creates; default 8.
	Partitions int32 `json:"partitions,omitempty"`
	// MaxMessageBytes is the largest record stepwise publishes; default
	// DefaultMaxMessageBytes (1 MiB), which the brokers' default
	// message.max.bytes takes. Set it to what the brokers take when theirs
	// differs. Records are kept small by design (ADR 0050); one over it is
	// refused before it leaves and the run hears of it.
	MaxMessageBytes int `json:"max_message_bytes,omitempty"`
}

// DefaultMaxMessageBytes is kafka.max_message_bytes when the configuration
// sets none.
const DefaultMaxMessageBytes = 1 << 20

// minMessageBytes is the smallest kafka.max_message_bytes taken: below it,
// a record of ids and a reason might not fit.
const minMessageBytes = 4 << 10

// Names returns the topic names under the configured prefix.
func (k Kafka) Names() topics.Names { return topics.NewNames(k.TopicPrefix) }

func (k *Kafka) setDefaults() {
	if k.TopicPrefix == "" {
		k.TopicPrefix = topics.DefaultPrefix
	}
	if k.Partitions == 0 {
		k.Partitions = 8
	}
	if k.MaxMessageBytes == 0 {
		k.MaxMessageBytes = DefaultMaxMessageBytes
	}
}

func (k Kafka) check(ps *problems, path string) {
	if bad, ok := topicChars(k.TopicPrefix); !ok {
		ps.add(field(path, "topic_prefix"), fmt.Sprintf("%q has %q; Kafka topic names allow only a-z A-Z 0-9 . _ -", k.TopicPrefix, bad))
	}
	if k.Partitions < 0 {
		ps.add(field(path, "partitions"), fmt.Sprintf("%d is negative", k.Partitions))
	}
	if k.MaxMessageBytes < minMessageBytes {
		ps.add(field(path, "max_message_bytes"), fmt.Sprintf("%d is below %d", k.MaxMessageBytes, minMessageBytes))
	}
}

// checkQueue checks that queue q makes a valid Kafka topic name under prefix.
func checkQueue(ps *problems, path, q, prefix string) {
	if q == "" {
		ps.add(path, "empty queue name")
		return
	}
	if bad, ok := topicChars(q); !ok {
		ps.add(path, fmt.Sprintf("%q has %q; queue names allow only a-z A-Z 0-9 . _ -", q, bad))
		return
	}
	if topic := topics.NewNames(prefix).ToolCalls(q); len(topic) > maxTopicLen {
		ps.add(path, fmt.Sprintf("queue %q makes the topic name %d characters long; Kafka allows %d", q, len(topic), maxTopicLen))
	}
}

// topicChars reports whether s uses only the characters Kafka allows in
// topic names, and the first rune it does not allow.
func topicChars(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return r, false
		}
	}
	return 0, true
}
