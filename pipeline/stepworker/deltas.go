package stepworker

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// deltaInterval is the least time between two text deltas written to a
// run's event log while its model streams: the text that arrives in
// between goes out as one delta. A model streams a chunk per token or
// word; one round trip and one event each made Redis's work a step grow
// with the answer's length, and held the model's stream until Redis
// answered. Twenty writes a second still reads as streaming to a person
// watching (ADR 0020).
const deltaInterval = 50 * time.Millisecond

// deltaStream takes the text a model streams (add, its OnText) and writes
// it to the event log from a goroutine of its own: the first chunk at
// once, then what arrived meanwhile at most once per interval, in order.
// The model never waits for Redis. close stops it: text not yet written is
// dropped, as the committed turn carries the whole of it (and the commit
// deletes the deltas anyway).
type deltaStream struct {
	write func(text string)
	tick  func() <-chan time.Time // the wait between two writes

	mu      sync.Mutex
	pending strings.Builder
	started bool // the writer runs
	closed  bool // no writer starts

	// made with the writer, at the first text: most models' steps (a
	// script's, a model that does not stream) have none
	wake chan struct{}
	quit chan struct{}
	done chan struct{}
}

func newDeltaStream(write func(text string), tick func() <-chan time.Time) *deltaStream {
	return &deltaStream{write: write, tick: tick}
}

// add queues text for the next write; the writer starts with the first.
func (d *deltaStream) add(text string) {
	if text == "" {
		return
	}
	d.mu.Lock()
	d.pending.WriteString(text)
	if !d.started && !d.closed {
		d.started = true
		d.wake, d.quit, d.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go d.loop()
	}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default: // a wake is queued already, or no writer (closed before any text: wake is nil)
	}
}

func (d *deltaStream) loop() {
	defer close(d.done)
	for {
		select {
		case <-d.quit:
			return
		case <-d.wake:
		}
		d.mu.Lock()
		text := d.pending.String()
		d.pending.Reset()
		d.mu.Unlock()
		if text != "" {
			d.write(text)
		}
		select {
		case <-d.quit:
			return
		case <-d.tick():
		}
	}
}

// close stops the writer, waiting for a write in flight, and drops the
// text not written. Nothing is written after it returns; closing again
// does nothing.
func (d *deltaStream) close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	started := d.started
	d.mu.Unlock()
	if started {
		close(d.quit)
		<-d.done
	}
}

// streamText returns the stream the model's OnText feeds for a step the
// worker infers: each write is one message.delta event in the run's log,
// for SSE clients. A delta that cannot be written is logged and dropped;
// the whole text is committed with the turn all the same.
func (w *Worker) streamText(ctx context.Context, run pipeline.Run, log *slog.Logger) *deltaStream {
	id, step, owner := run.ID, run.Step, run.LeaseOwner // not the whole run in the closure
	return newDeltaStream(func(text string) {
		if err := w.store.AppendDelta(ctx, id, step, owner, w.redact.String(text), w.now()); err != nil {
			log.Debug("text delta dropped", "error", err)
		}
	}, func() <-chan time.Time { return time.After(deltaInterval) })
}
