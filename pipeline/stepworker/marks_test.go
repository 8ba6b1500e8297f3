package stepworker

import (
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
)

// A mark written after the publish counts for dispatch_timeout; one written
// before it, only while the worker that wrote it is alive.
func TestDispatched_trusts_a_mark_written_before_the_publish_while_its_worker_lives(t *testing.T) {
	w := &Worker{instance: "me", settings: config.StepWorker{DispatchTimeout: config.D(5 * time.Minute)}}
	now := time.UnixMilli(1_750_000_000_000)
	marked := func(by string, ago time.Duration) pipeline.ToolCall {
		return pipeline.ToolCall{Status: pipeline.CallNew, DispatchedAt: now.Add(-ago), DispatchedBy: by}
	}
	live := map[string]bool{"other": true}
	w.live.Store(&live)
	for _, tc := range []struct {
		what string
		call pipeline.ToolCall
		want bool
	}{
		{"never marked", pipeline.ToolCall{Status: pipeline.CallNew}, false},
		{"marked after its publish", marked("", time.Minute), true},
		{"marked after its publish, longer ago than dispatch_timeout", marked("", 6*time.Minute), false},
		{"marked by this worker", marked("me", time.Second), true},
		{"marked by a live worker", marked("other", time.Second), true},
		{"marked by a live worker, longer ago than dispatch_timeout", marked("other", 6*time.Minute), false},
		{"marked by a worker gone quiet", marked("gone", time.Second), false},
	} {
		if got := w.dispatched(tc.call, now); got != tc.want {
			t.Errorf("%s: dispatched = %v, want %v", tc.what, got, tc.want)
		}
	}
	// Before its first heartbeat a worker knows only itself.
	w.live.Store(nil)
	if w.dispatched(marked("other", time.Second), now) || !w.dispatched(marked("me", time.Second), now) {
		t.Error("with no heartbeat read yet, only this worker's marks may count")
	}
}
