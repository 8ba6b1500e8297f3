package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/stepwise-run/stepwise/topics"
)

type ctxKey struct{}

func testRetry(maxRetries int) middleware.Retry {
	return middleware.Retry{
		MaxRetries:          maxRetries,
		InitialInterval:     time.Millisecond,
		MaxInterval:         time.Millisecond,
		Multiplier:          2,
		ResetContextOnRetry: true,
		ShouldRetry:         func(p middleware.RetryParams) bool { return !topics.IsPermanent(p.Err) },
	}
}

func TestRetryOnFailure_a_message_handled_at_once_allocates_nothing(t *testing.T) {
	h := retryOnFailure(testRetry(3))(func(*message.Message) ([]*message.Message, error) { return nil, nil })
	msg := message.NewMessage("1", nil)
	if n := testing.AllocsPerRun(100, func() { _, _ = h(msg) }); n != 0 {
		t.Errorf("%v allocations a message, want 0", n)
	}
}

func TestRetryOnFailure_calls_the_handler_as_often_as_Watermills_Retry(t *testing.T) {
	permanent := topics.Permanent(errors.New("malformed"))
	transient := errors.New("redis: connection refused")
	for _, tc := range []struct {
		name       string
		maxRetries int
		failures   int   // the first attempts that fail
		failWith   error // their error
		wantCalls  int
		wantErr    error
	}{
		{"succeeds at once", 3, 0, transient, 1, nil},
		{"succeeds at the third attempt", 3, 2, transient, 3, nil},
		{"fails past its retries", 2, 10, transient, 3, transient},
		{"no retries", 0, 10, transient, 1, transient},
		{"a permanent error is not retried", 3, 10, permanent, 1, permanent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mw := range []message.HandlerMiddleware{testRetry(tc.maxRetries).Middleware, retryOnFailure(testRetry(tc.maxRetries))} {
				calls := 0
				h := mw(func(msg *message.Message) ([]*message.Message, error) {
					calls++
					if msg.Context().Value(ctxKey{}) != nil {
						t.Error("an attempt saw the context an earlier attempt set")
					}
					msg.SetContext(context.WithValue(msg.Context(), ctxKey{}, calls))
					if calls <= tc.failures {
						return nil, tc.failWith
					}
					return nil, nil
				})
				_, err := h(message.NewMessage("1", nil))
				if calls != tc.wantCalls {
					t.Errorf("handler called %d times, want %d", calls, tc.wantCalls)
				}
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("error %v, want %v", err, tc.wantErr)
				}
			}
		})
	}
}

func TestRetryOnFailure_a_cancelled_message_is_not_handled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	msg := message.NewMessage("1", nil)
	msg.SetContext(ctx)
	calls := 0
	_, err := retryOnFailure(testRetry(3))(func(*message.Message) ([]*message.Message, error) {
		calls++
		return nil, nil
	})(msg)
	if calls != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("handler called %d times, error %v; want 0 and %v", calls, err, context.Canceled)
	}
}
