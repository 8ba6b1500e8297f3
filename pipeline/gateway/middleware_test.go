package gateway_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestEvery_request_is_logged_at_debug_with_method_path_status_and_duration(t *testing.T) {
	var logs syncBuffer
	h := newHarness(t, func(c *gateway.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	h.get("/v1/runs/missing").want(t, http.StatusNotFound, nil)
	eventually(t, func() bool { return strings.Contains(logs.String(), "path=/v1/runs/missing") }, "a log line for the request")
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "path=/v1/runs/missing") {
			line = l
		}
	}
	for _, want := range []string{"level=DEBUG", "method=GET", "status=404", "duration="} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %q", line, want)
		}
	}
}
