package kafka

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/stepwise-run/stepwise/topics"
)

// Metadata keys (Kafka headers) a dead-lettered message carries besides its
// own. They are Watermill's poison-queue keys.
const (
	// MetadataDeadLetterReason holds the handler's error text, on one line.
	MetadataDeadLetterReason = middleware.ReasonForPoisonedKey
	// MetadataDeadLetterTopic holds the topic the message was consumed from.
	MetadataDeadLetterTopic = middleware.PoisonedTopicKey
	// MetadataDeadLetterHandler holds the name of the handler that refused it.
	MetadataDeadLetterHandler = middleware.PoisonedHandlerKey
	// MetadataDeadLetterSubscriber holds the name of the handler's subscriber.
	MetadataDeadLetterSubscriber = middleware.PoisonedSubscriberKey
)

// Router defaults, used for the zero fields of a RouterConfig.
const (
	// DefaultMaxRetries is how often a transient error is retried in place.
	DefaultMaxRetries = 3
	// DefaultRetryInterval is the pause before the first retry.
	DefaultRetryInterval = 100 * time.Millisecond
	// DefaultMaxRetryInterval caps the doubling pause between retries.
	DefaultMaxRetryInterval = time.Second
	// DefaultCloseTimeout is how long closing waits for running handlers.
	DefaultCloseTimeout = 15 * time.Second
)

// RouterConfig configures [NewRouter].
type RouterConfig struct {
	// Logger receives the router's logs; nil means slog.Default().
	Logger *slog.Logger

	// DeadLetterPublisher publishes dead-lettered messages. Required.
	DeadLetterPublisher message.Publisher
	// DeadLetterTopic is where dead-lettered messages go, normally
	// topics.Names.DeadLetter(). Required.
	DeadLetterTopic string

	// MaxRetries is how often a transient error is retried in place before
	// the message is nacked; 0 means DefaultMaxRetries, negative means none.
	MaxRetries int
	// RetryInterval is the pause before the first retry, doubled for each
	// further one up to MaxRetryInterval. 0 means DefaultRetryInterval.
	RetryInterval time.Duration
	// MaxRetryInterval caps the pause between retries; 0 means
	// DefaultMaxRetryInterval.
	MaxRetryInterval time.Duration

	// CloseTimeout is how long Close (or the end of Run's context) waits for
	// running handlers before giving up on them; 0 means DefaultCloseTimeout.
	CloseTimeout time.Duration
}

func (c *RouterConfig) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = DefaultRetryInterval
	}
	if c.MaxRetryInterval == 0 {
		c.MaxRetryInterval = DefaultMaxRetryInterval
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
}

// Validate reports every problem of the configuration at once.
func (c RouterConfig) Validate() error {
	var errs []error
	if c.DeadLetterPublisher == nil {
		errs = append(errs, errors.New("DeadLetterPublisher is missing"))
	}
	if c.DeadLetterTopic == "" {
		errs = append(errs, errors.New("DeadLetterTopic is missing"))
	}
	if c.RetryInterval < 0 {
		errs = append(errs, fmt.Errorf("RetryInterval is %v, want ≥ 0", c.RetryInterval))
	}
	if c.MaxRetryInterval < 0 {
		errs = append(errs, fmt.Errorf("MaxRetryInterval is %v, want ≥ 0", c.MaxRetryInterval))
	}
	if c.CloseTimeout < 0 {
		errs = append(errs, fmt.Errorf("CloseTimeout is %v, want ≥ 0", c.CloseTimeout))
	}
	return errors.Join(errs...)
}

// NewRouter returns a Watermill router whose handlers all run inside this
// middleware, outermost first (the order of Watermill's basic router
// example):
//
//  1. Correlation ID: messages a handler returns carry the correlation id of
//     the message it handled.
//  2. Dead letter: when the error that comes out of the layers below
//     satisfies [topics.IsPermanent], or is a recovered panic, the message
//     is published to DeadLetterTopic with its metadata plus
//     [MetadataDeadLetterReason] (the error text on one line, [OneLine]),
//     [MetadataDeadLetterTopic], [MetadataDeadLetterHandler] and
//     [MetadataDeadLetterSubscriber], logged at warn level (topic, key,
//     record, handler, reason), and then acknowledged: the consumer goes on
//     with the next message. If that publish fails, the message is nacked
//     and comes back.
//  3. Retry: any other error is retried in place, MaxRetries times with
//     exponential backoff from RetryInterval to MaxRetryInterval. Permanent
//     errors are not retried. When the retries are spent the error reaches
//     the router, which nacks the message; the subscriber delivers it again
//     after its nack pause, and the cycle repeats until it succeeds. A
//     transient error never drops or dead-letters a message.
//  4. Recoverer: a panic becomes an error. It is retried like a transient
//     error (a panic may come from a state that a moment later is gone), but
//     a panic that survives the retries is dead-lettered rather than
//     redelivered: it is a bug for this input, and redelivering it forever
//     would stall every other run on the partition. The reason holds the
//     panic value and stack.
//
// Retries and the dead-letter publish hold the message's partition while
// they run. The router's context (Run's ctx, or Close) cancels a retry wait;
// the message is then left unacknowledged and comes back to whichever member
// owns the partition next.
//
// Add handlers and call Run; Run returns when its context is cancelled or
// Close is called, after running handlers finish or CloseTimeout passes.
func NewRouter(cfg RouterConfig) (*message.Router, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kafka router: %w", err)
	}
	logger := Logger(cfg.Logger)
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: cfg.CloseTimeout}, logger)
	if err != nil {
		return nil, fmt.Errorf("kafka router: %w", err)
	}
	deadLetter, err := middleware.PoisonQueueWithFilter(deadLetterPublisher{cfg.DeadLetterPublisher, cfg.Logger}, cfg.DeadLetterTopic, belongsInDeadLetter)
	if err != nil {
		return nil, fmt.Errorf("kafka router: dead letter: %w", err)
	}
	retry := middleware.Retry{
		MaxRetries:          cfg.MaxRetries,
		InitialInterval:     cfg.RetryInterval,
		MaxInterval:         cfg.MaxRetryInterval,
		Multiplier:          2,
		RandomizationFactor: 0.2,
		ShouldRetry: func(p middleware.RetryParams) bool {
			return !topics.IsPermanent(p.Err)
		},
		ResetContextOnRetry: true,
		Logger:              logger,
	}
	router.AddMiddleware(
		middleware.CorrelationID,
		deadLetter,
		retryOnFailure(retry),
		middleware.Recoverer,
	)
	return router, nil
}

// belongsInDeadLetter reports whether a handler's final error sends its
// message to the dead-letter topic: permanent errors and panics.
func belongsInDeadLetter(err error) bool {
	var panicked middleware.RecoveredPanicError
	return topics.IsPermanent(err) || errors.As(err, &panicked)
}
