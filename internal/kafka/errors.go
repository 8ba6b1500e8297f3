package kafka

import "errors"

// ErrUnreachable is wrapped by errors of [Check] and [EnsureTopics] when no
// broker could be reached (refused, timed out, or not speaking Kafka).
var ErrUnreachable = errors.New("kafka brokers unreachable")
