package mcptool

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/secrets"
)

// A secret a server writes across the cut of a stderr line is redacted
// whole, in the log and in the line kept for error messages; written in
// pieces, a long line is still one line.
func TestStderr_a_secret_across_the_cut_is_redacted_whole(t *testing.T) {
	const secret = "sk-live-0123456789abcdefghijklmnopqr"
	var logged bytes.Buffer
	w := &stderrLog{
		log:    slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})),
		redact: secrets.New(map[string]string{"TOKEN": secret}),
	}
	line := strings.Repeat("x", maxStderrLine-12) + " token=" + secret + " rejected\n"
	for chunk := range pieces(line, 100) {
		w.Write([]byte(chunk))
	}
	last := w.lastLine()
	for _, out := range []string{last, logged.String()} {
		for n := 4; n <= len(secret); n++ {
			if strings.Contains(out, secret[:n]) {
				t.Fatalf("%d characters of the secret are kept: %q", n, out[max(0, len(out)-80):])
			}
		}
	}
	if !strings.HasPrefix(last, strings.Repeat("x", maxStderrLine-12)+" token=[red") || len(last) != maxStderrLine {
		t.Fatalf("the kept line is not the redacted line cut at %d: %q", maxStderrLine, last[max(0, len(last)-40):])
	}
}

// pieces cuts s into pieces of n bytes.
func pieces(s string, n int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}
