package app

import (
	"io"
	"log/slog"
	"os"
	"strings"
)

// Environment variables of the programs' logs.
const (
	EnvLogLevel  = "STEPWISE_LOG_LEVEL"  // debug, info (default), warn or error
	EnvLogFormat = "STEPWISE_LOG_FORMAT" // text (default) or json
)

// NewLogger returns a logger on stderr for the named program, at the level
// $STEPWISE_LOG_LEVEL names, as text or, with STEPWISE_LOG_FORMAT=json, as
// one JSON object per line (slog's JSON: time, level, msg, program, and the
// record's attributes — run_id, call_id and step where a handler has them).
func NewLogger(program string) *slog.Logger {
	return newLogger(os.Stderr, program)
}

func newLogger(w io.Writer, program string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	switch strings.ToLower(os.Getenv(EnvLogLevel)) {
	case "debug":
		opts.Level = slog.LevelDebug
	case "warn":
		opts.Level = slog.LevelWarn
	case "error":
		opts.Level = slog.LevelError
	}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if strings.EqualFold(os.Getenv(EnvLogFormat), "json") {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(h).With("program", program)
}
