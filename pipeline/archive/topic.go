package archive

import (
	"errors"
	"log/slog"

	"github.com/stepwise-run/stepwise/topics"
)

// topicSink publishes records to the run-archive topic. A record over the
// broker's message size limit goes out without its messages and events
// (Omitted), logged as an error: the run's record and its outcome are
// kept, and no retry could send more (ADR 0070).
type topicSink struct {
	pub   topics.Publisher
	topic string
	log   *slog.Logger
}

func (t *topicSink) write(rec topics.RunArchived) error {
	err := topics.Publish(t.pub, t.topic, rec)
	if !errors.Is(err, topics.ErrTooLarge) {
		return err
	}
	t.log.Error("run archived without its messages and events: too large with them", "run_id", rec.RunID, "error", err)
	rec.Messages, rec.Events, rec.Omitted = nil, nil, true
	return topics.Publish(t.pub, t.topic, rec)
}
