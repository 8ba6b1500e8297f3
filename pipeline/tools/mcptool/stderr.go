package mcptool

import (
	"bytes"
	"log/slog"
	"sync"

	"github.com/stepwise-run/stepwise/pipeline/secrets"
)

// maxStderrLine bounds one logged line of a server's stderr and the last line
// kept for error messages.
const maxStderrLine = 512

// maxStderrPending bounds what is kept of a line that has no end yet: a
// line is redacted whole before it is cut to maxStderrLine, so that a
// secret across the cut is not left half.
const maxStderrPending = 64 << 10

// stderrLog is the stderr of one server process: each line is redacted and
// logged at debug level, and the last non-empty one is kept, since it
// usually says why a process that exited did so.
type stderrLog struct {
	log    *slog.Logger
	redact *secrets.Redactor // nil: nothing is redacted

	mu      sync.Mutex
	partial []byte
	last    string
}

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			if len(w.partial) > maxStderrPending {
				w.line(w.partial)
				w.partial = w.partial[:0]
			}
			break
		}
		w.partial = append(w.partial, p[:i]...)
		w.line(w.partial)
		w.partial = w.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (w *stderrLog) line(b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return
	}
	if w.redact != nil {
		b = []byte(w.redact.String(string(b)))
	}
	if len(b) > maxStderrLine {
		b = b[:maxStderrLine]
	}
	w.last = string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
	w.log.Debug("mcp server stderr", "line", w.last)
}

// lastLine returns the last complete or pending line written.
func (w *stderrLog) lastLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(bytes.TrimSpace(w.partial)) > 0 {
		w.line(w.partial)
		w.partial = w.partial[:0]
	}
	return w.last
}
