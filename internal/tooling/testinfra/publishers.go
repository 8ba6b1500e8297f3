package testinfra

import (
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Publishers that wrap a real one to make Kafka's worst legal behaviour
// happen on every message: duplicates, reordering, and a record of what was
// published when. They change delivery, never content.

// Duplicating publishes every message twice (two Kafka records).
type Duplicating struct{ message.Publisher }

// Publish publishes each message, then a copy of it.
func (d Duplicating) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		if err := d.Publisher.Publish(topic, m, m.Copy()); err != nil {
			return err
		}
	}
	return nil
}

// Reordering holds messages of the given topics back and publishes each
// batch it collected in reverse order, once Window has passed since the
// batch's first message. Messages of other topics pass straight through.
type Reordering struct {
	message.Publisher
	Window time.Duration
	Topics map[string]bool

	mu      sync.Mutex
	pending map[string][]*message.Message
	errs    []error
}

// Publish holds or forwards the messages.
func (r *Reordering) Publish(topic string, msgs ...*message.Message) error {
	if !r.Topics[topic] {
		return r.Publisher.Publish(topic, msgs...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[string][]*message.Message{}
	}
	if len(r.pending[topic]) == 0 {
		time.AfterFunc(r.Window, func() { r.flush(topic) })
	}
	r.pending[topic] = append(r.pending[topic], msgs...)
	return nil
}

func (r *Reordering) flush(topic string) {
	r.mu.Lock()
	batch := r.pending[topic]
	r.pending[topic] = nil
	r.mu.Unlock()
	for i := len(batch) - 1; i >= 0; i-- {
		if err := r.Publisher.Publish(topic, batch[i]); err != nil {
			r.mu.Lock()
			r.errs = append(r.errs, err)
			r.mu.Unlock()
		}
	}
}

// Errors returns the publish errors of held messages.
func (r *Reordering) Errors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

// Published is one message a Recording publisher passed on.
type Published struct {
	Topic   string
	Payload []byte
}

// Recording passes messages on and remembers them in order.
type Recording struct {
	message.Publisher

	mu  sync.Mutex
	log []Published
}

// Publish records, then publishes.
func (r *Recording) Publish(topic string, msgs ...*message.Message) error {
	r.mu.Lock()
	for _, m := range msgs {
		r.log = append(r.log, Published{Topic: topic, Payload: append([]byte(nil), m.Payload...)})
	}
	r.mu.Unlock()
	return r.Publisher.Publish(topic, msgs...)
}

// Log returns what was published so far, in order.
func (r *Recording) Log() []Published {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Published(nil), r.log...)
}
