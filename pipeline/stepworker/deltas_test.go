package stepworker

import (
	"testing"
	"time"
)

// The first chunk a model streams is written at once; what arrives until
// the interval has passed goes out as one write, in order; the model never
// waits for a write; after close nothing is written and the rest is
// dropped. The interval is a channel the test fires, so nothing here
// depends on timing.
func TestDeltaStream_writes_the_first_chunk_at_once_then_one_write_an_interval(t *testing.T) {
	writes := make(chan string, 10)
	release := make(chan struct{}) // a write blocks until the test lets it go
	ticks := make(chan time.Time)
	d := newDeltaStream(func(text string) { writes <- text; <-release }, func() <-chan time.Time { return ticks })

	d.add("")
	select {
	case w := <-writes:
		t.Fatalf("empty text written: %q", w)
	default:
	}
	d.add("The ")
	if w := <-writes; w != "The " {
		t.Fatalf("first write %q, want the first chunk alone", w)
	}
	for _, chunk := range []string{"answer ", "is ", "forty"} { // the writer is busy: add must not wait for it
		d.add(chunk)
	}
	release <- struct{}{}
	select {
	case w := <-writes:
		t.Fatalf("%q written before the interval passed", w)
	case <-time.After(50 * time.Millisecond):
	}
	ticks <- time.Now()
	if w := <-writes; w != "answer is forty" {
		t.Fatalf("second write %q, want what arrived meanwhile, in order", w)
	}
	d.add("-two.")
	release <- struct{}{}
	d.close() // waits on the tick, which never comes: close ends it
	select {
	case w := <-writes:
		t.Fatalf("%q written after close", w)
	default:
	}
	d.add("late")
	select {
	case w := <-writes:
		t.Fatalf("%q written after close", w)
	case <-time.After(20 * time.Millisecond):
	}
}

// A model that streams nothing starts no writer, and closing it returns.
func TestDeltaStream_that_got_no_text_closes_at_once(t *testing.T) {
	d := newDeltaStream(func(text string) { t.Errorf("wrote %q", text) }, func() <-chan time.Time { return nil })
	d.close()
	d.close()
	d.add("late") // a model that streams after its step gave up: dropped, no writer started
	if d.wake != nil {
		t.Error("text after the close started a writer")
	}
}
