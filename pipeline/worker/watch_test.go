package worker_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline/worker"
)

var errCalledOff = errors.New("called off")

// checker records the keys each check is given and calls off those in off.
type checker struct {
	mu   sync.Mutex
	seen []string
	off  map[string]bool
}

func (c *checker) check(_ context.Context, keys []string) ([]error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	causes := make([]error, len(keys))
	for i, k := range keys {
		c.seen = append(c.seen, k)
		if c.off[k] {
			causes[i] = errCalledOff
		}
	}
	return causes, nil
}

func (c *checker) saw(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.seen, key)
}

// runWatch runs w until the test ends, passing the checks that fail to
// failed (nil: they fail the test).
func runWatch(t *testing.T, w *worker.Watch[string], failed func(error)) {
	t.Helper()
	if failed == nil {
		failed = func(err error) { t.Errorf("check failed: %v", err) }
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, failed)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func TestWatch_stops_the_executions_a_check_calls_off_and_no_other(t *testing.T) {
	c := &checker{off: map[string]bool{"off": true}}
	w := worker.NewWatch(2*time.Millisecond, c.check)
	runWatch(t, w, nil)
	off1, done1 := w.Start(context.Background(), "off")
	defer done1()
	off2, done2 := w.Start(context.Background(), "off")
	defer done2()
	on, doneOn := w.Start(context.Background(), "on")
	defer doneOn()
	testinfra.Eventually(t, 5*time.Second, func() bool { return off1.Err() != nil && off2.Err() != nil },
		func() string { return "both executions of the key called off stop" })
	for _, ctx := range []context.Context{off1, off2} {
		if cause := context.Cause(ctx); !errors.Is(cause, errCalledOff) {
			t.Fatalf("cause = %v, want %v", cause, errCalledOff)
		}
	}
	testinfra.Eventually(t, 5*time.Second, func() bool { return c.saw("on") },
		func() string { return "the other key is checked" })
	if on.Err() != nil {
		t.Fatalf("an execution nobody called off stopped: %v", context.Cause(on))
	}
}

func TestWatch_checks_no_execution_that_is_over(t *testing.T) {
	c := &checker{off: map[string]bool{}}
	w := worker.NewWatch(2*time.Millisecond, c.check)
	_, done := w.Start(context.Background(), "over")
	done()
	runWatch(t, w, nil)
	_, doneLater := w.Start(context.Background(), "later")
	defer doneLater()
	testinfra.Eventually(t, 5*time.Second, func() bool { return c.saw("later") },
		func() string { return "the running execution is checked" })
	if c.saw("over") {
		t.Fatal("an execution that was over was checked")
	}
}

func TestWatch_stop_cancels_a_keys_executions_at_once(t *testing.T) {
	w := worker.NewWatch(time.Hour, (&checker{}).check)
	ctx, done := w.Start(context.Background(), "k")
	defer done()
	w.Stop("k", errCalledOff)
	if cause := context.Cause(ctx); !errors.Is(cause, errCalledOff) {
		t.Fatalf("cause = %v, want %v", cause, errCalledOff)
	}
}

func TestWatch_a_check_that_fails_is_made_again_at_the_next_tick(t *testing.T) {
	var mu sync.Mutex
	var failures []error
	calls := 0
	w := worker.NewWatch(2*time.Millisecond, func(_ context.Context, keys []string) ([]error, error) {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls == 1 {
			return nil, errors.New("redis hiccup")
		}
		return []error{errCalledOff}, nil
	})
	runWatch(t, w, func(err error) { mu.Lock(); failures = append(failures, err); mu.Unlock() })
	exec, over := w.Start(context.Background(), "k")
	defer over()
	testinfra.Eventually(t, 5*time.Second, func() bool { return exec.Err() != nil },
		func() string { return "the execution was never stopped after the failed check" })
	mu.Lock()
	defer mu.Unlock()
	if len(failures) != 1 || failures[0].Error() != "redis hiccup" {
		t.Fatalf("failures = %v, want the one hiccup", failures)
	}
}
