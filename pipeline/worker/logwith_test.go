package worker_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/worker"
)

// A logger from LogWith writes what one from Logger.With writes: the same
// attributes in the same order, before and within groups, through the
// loggers made from it.
func TestLogWith_writes_what_With_writes(t *testing.T) {
	newLogger := func(buf *bytes.Buffer) *slog.Logger {
		return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{
			ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey && len(groups) == 0 {
					return slog.Attr{}
				}
				return a
			},
		}))
	}
	write := func(with func(*slog.Logger, ...any) *slog.Logger) string {
		var buf bytes.Buffer
		l := with(newLogger(&buf), "run_id", "r1", "step", 3, slog.String("tool", "echo"))
		l.Info("claimed", "attempt", 1)
		l.Debug("not written")
		l.With("reason", "limit").Warn("deferred")
		l.WithGroup("call").Error("failed", "error", "boom")
		return buf.String()
	}
	eager := write(func(l *slog.Logger, args ...any) *slog.Logger { return l.With(args...) })
	lazy := write(worker.LogWith)
	if lazy != eager {
		t.Errorf("LogWith wrote\n%s\nWith wrote\n%s", lazy, eager)
	}
	if want := "level=INFO msg=claimed run_id=r1 step=3 tool=echo attempt=1\n"; eager[:len(want)] != want {
		t.Errorf("With wrote %q first, want %q", eager, want)
	}
}

// A logger from LogWith that writes nothing costs less than one from
// Logger.With, which formats its attributes at once.
func TestLogWith_formats_nothing_until_it_writes(t *testing.T) {
	l := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	runID, callID := "run-1", "call-1"
	eager := testing.AllocsPerRun(100, func() { l.With("run_id", runID, "step", 3, "call_id", callID).Debug("x") })
	lazy := testing.AllocsPerRun(100, func() { worker.LogWith(l, "run_id", runID, "step", 3, "call_id", callID).Debug("x") })
	if lazy >= eager {
		t.Errorf("LogWith: %.0f allocations, Logger.With: %.0f", lazy, eager)
	}
}
