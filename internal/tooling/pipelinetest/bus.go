package pipelinetest

import (
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Bus is an in-memory topic log: Publish appends, the driver delivers in
// order. Every message published stays in Log (run results, dead letters).
type Bus struct {
	mu      sync.Mutex
	pending []envelope
	Log     []envelope
}

type envelope struct {
	Topic string
	Msg   *message.Message
}

var _ message.Publisher = (*Bus)(nil)

// Publish queues msgs on topic.
func (b *Bus) Publish(topic string, msgs ...*message.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range msgs {
		e := envelope{Topic: topic, Msg: m.Copy()}
		b.pending = append(b.pending, e)
		b.Log = append(b.Log, e)
	}
	return nil
}

// Close does nothing.
func (b *Bus) Close() error { return nil }

// next takes the oldest undelivered message, or with newestFirst the
// newest.
func (b *Bus) next(newestFirst bool) (envelope, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) == 0 {
		return envelope{}, false
	}
	if newestFirst {
		e := b.pending[len(b.pending)-1]
		b.pending = b.pending[:len(b.pending)-1]
		return e, true
	}
	e := b.pending[0]
	b.pending = b.pending[1:]
	return e, true
}

// redeliver puts a message back at the head: it was not acknowledged.
func (b *Bus) redeliver(e envelope) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append([]envelope{e}, b.pending...)
}

// published returns the messages ever published to topic.
func (b *Bus) published(topic string) []*message.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*message.Message
	for _, e := range b.Log {
		if e.Topic == topic {
			out = append(out, e.Msg)
		}
	}
	return out
}
