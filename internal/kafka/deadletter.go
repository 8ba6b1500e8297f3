package kafka

import (
	"log/slog"
	"strings"
	"unicode"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/topics"
)

// deadLetterPublisher is the publisher of the router's poison queue: it
// puts each dead-lettered message's reason on one line (OneLine) and, once
// the message is published, logs it at warn level with the topic it came
// from, its key (the run id), handler and reason.
type deadLetterPublisher struct {
	next message.Publisher
	log  *slog.Logger
}

func (p deadLetterPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		m.Metadata.Set(MetadataDeadLetterReason, OneLine(m.Metadata.Get(MetadataDeadLetterReason)))
	}
	if err := p.next.Publish(topic, msgs...); err != nil {
		return err
	}
	for _, m := range msgs {
		p.log.Warn("message dead-lettered", "topic", m.Metadata.Get(MetadataDeadLetterTopic),
			"key", m.Metadata.Get(topics.MetadataRunID), "record", m.UUID,
			"handler", m.Metadata.Get(MetadataDeadLetterHandler), "reason", m.Metadata.Get(MetadataDeadLetterReason))
	}
	return nil
}

func (p deadLetterPublisher) Close() error { return p.next.Close() }

// OneLine writes a dead-letter reason on one line, for the header and for
// tools that read one record per line: each line break, with the blanks
// around it, becomes "; " (errors.Join and a panic's stack break lines),
// and any other control character a space.
func OneLine(reason string) string {
	lines := strings.Split(reason, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			kept = append(kept, l)
		}
	}
	return strings.Map(func(c rune) rune {
		if unicode.IsControl(c) {
			return ' '
		}
		return c
	}, strings.Join(kept, "; "))
}
