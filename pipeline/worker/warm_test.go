package worker_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/pipeline/worker"
)

func TestWarm_returns_the_handlers_error_and_raises_its_panic_in_the_callers_goroutine(t *testing.T) {
	boom := errors.New("boom")
	var got *message.Message
	h := worker.Warm(func(msg *message.Message) error { got = msg; return boom })
	msg := message.NewMessage("1", nil)
	if err := h(msg); !errors.Is(err, boom) || got != msg {
		t.Fatalf("Warm(h)(msg) = %v with %v, want boom with the message", err, got)
	}
	if err := worker.Warm(func(*message.Message) error { return nil })(msg); err != nil {
		t.Fatalf("a handler that succeeds: %v", err)
	}
	defer func() {
		r, _ := recover().(string)
		if !strings.Contains(r, "nil map") || !strings.Contains(r, "warm_test.go") {
			t.Fatalf("recovered %q, want the panic with the handler's stack", r)
		}
	}()
	_ = worker.Warm(func(*message.Message) error {
		var m map[string]int
		m["x"]++
		return nil
	})(msg)
	t.Fatal("the panic did not reach the caller")
}
