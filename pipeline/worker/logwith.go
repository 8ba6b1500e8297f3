package worker

import (
	"context"
	"log/slog"
)

// LogWith is l.With(args...), but its attributes are formatted only when
// the logger writes a record. slog's handlers format With's attributes at
// once; the workers make a logger for every step and every call, which
// writes nothing on nearly all of them (their records are warnings and
// errors), so that work, half a kilobyte of allocation each time, was done
// for nothing.
func LogWith(l *slog.Logger, args ...any) *slog.Logger {
	return slog.New(&lazyAttrs{inner: l.Handler(), args: args})
}

// lazyAttrs is a handler that adds args (as Logger.With takes them) to
// inner when it writes a record or opens a group.
type lazyAttrs struct {
	inner slog.Handler
	args  []any
}

func (h *lazyAttrs) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	return h.with().Handle(ctx, r)
}

// WithAttrs stays lazy: a logger made with a trace id, or a reason, from
// one of LogWith's writes nothing more often than not as well.
func (h *lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	args := make([]any, len(h.args), len(h.args)+len(attrs))
	copy(args, h.args)
	for _, a := range attrs {
		args = append(args, a)
	}
	return &lazyAttrs{inner: h.inner, args: args}
}

func (h *lazyAttrs) WithGroup(name string) slog.Handler { return h.with().WithGroup(name) }

// with is inner with the attributes added, as Logger.With adds them.
func (h *lazyAttrs) with() slog.Handler { return slog.New(h.inner).With(h.args...).Handler() }
