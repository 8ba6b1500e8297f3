package app

import (
	"log/slog"
	"os"
	"strings"
)

// EnvLogLevel sets the log level of every program: debug, info (default),
// warn or error.
const EnvLogLevel = "STEPWISE_LOG_LEVEL"

// NewLogger returns a text logger on stderr for the named program, at the
// level $STEPWISE_LOG_LEVEL names.
func NewLogger(program string) *slog.Logger {
	level := slog.LevelInfo
	switch strings.ToLower(os.Getenv(EnvLogLevel)) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("program", program)
}
