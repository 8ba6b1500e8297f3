package kafka

import (
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
)

// retryOnFailure is r's middleware, built only for a message whose first
// attempt fails. Watermill's Retry makes a backoff and half a dozen
// closures for every message before the handler runs (about 1.8 KB a step
// of the pipeline), of which nothing is used when the handler succeeds,
// as it does almost always.
//
// The first attempt runs alone. When it fails, r's middleware takes over
// with that failure as its own first attempt, so that what follows, the
// ShouldRetry check, the backoff, the count of attempts, the logging, is
// Watermill's: the handler is not called again before r's backoff says so.
// The message's context is put back as the first attempt found it, as r
// does between attempts.
func retryOnFailure(r middleware.Retry) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			ctx := msg.Context()
			if ctx.Err() != nil {
				return r.Middleware(h)(msg)
			}
			produced, err := h(msg)
			if err == nil {
				return produced, nil
			}
			msg.SetContext(ctx)
			failed := true
			return r.Middleware(func(msg *message.Message) ([]*message.Message, error) {
				if failed {
					failed = false
					return produced, err
				}
				return h(msg)
			})(msg)
		}
	}
}
