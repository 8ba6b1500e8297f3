package kafka_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/stepwise-run/stepwise/internal/kafka"
)

// The Watermill logger passes on what its slog logger logs, fields
// included, and drops the levels the slog logger does not log.
func TestLogger_passes_what_slog_logs_and_drops_the_rest(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug, watermill.LevelTrace} {
		var buf bytes.Buffer
		log := kafka.Logger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))).
			With(watermill.LogFields{"topic": "t"})
		log.Trace("a trace", watermill.LogFields{"n": 1})
		log.Debug("a debug", watermill.LogFields{"n": 2})
		log.Info("an info", watermill.LogFields{"n": 3})
		log.Error("an error", errors.New("boom"), watermill.LogFields{"n": 4})
		out := buf.String()
		for msg, want := range map[string]bool{
			`msg="a trace" topic=t n=1`:             level <= watermill.LevelTrace,
			`msg="a debug" topic=t n=2`:             level <= slog.LevelDebug,
			`msg="an info" topic=t n=3`:             true,
			`msg="an error" topic=t n=4 error=boom`: true,
		} {
			if strings.Contains(out, msg) != want {
				t.Errorf("at level %v, logged %q: %v, want %v:\n%s", level, msg, !want, want, out)
			}
		}
	}
}

// A debug message at info level costs no allocation: Watermill logs
// several per message handled.
func TestLogger_a_dropped_message_allocates_nothing(t *testing.T) {
	log := kafka.Logger(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	fields := watermill.LogFields{"message_uuid": "m", "topic": "t", "handler": "h"}
	if n := testing.AllocsPerRun(100, func() { log.Debug("handling", fields); log.Trace("handled", fields) }); n != 0 {
		t.Fatalf("%v allocations for two dropped messages", n)
	}
}
