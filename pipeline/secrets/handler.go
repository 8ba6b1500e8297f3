package secrets

import (
	"context"
	"log/slog"
)

// Handler returns a slog.Handler that redacts each record's message and
// its string, error and other attribute values with r before next sees
// them. A nil r returns next itself.
func Handler(next slog.Handler, r *Redactor) slog.Handler {
	if r == nil {
		return next
	}
	return &handler{next: next, r: r}
}

type handler struct {
	next slog.Handler
	r    *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(red), r: h.r}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), r: h.r}
}

// attr redacts a's value: strings as they are, groups member by member,
// anything else (an error, a Stringer) by its text.
func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		members := v.Group()
		red := make([]any, len(members))
		for i, m := range members {
			red[i] = h.attr(m)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		return slog.String(a.Key, h.r.String(v.String()))
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}
