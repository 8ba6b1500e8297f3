//go:build chaos

package chaos_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/chaos"
)

// TestChaos runs one chaos experiment with the knobs of the STEPWISE_CHAOS_*
// variables (default: 1000 runs, 60 s of churn) and fails when a run is
// stuck, wrong, committed or started twice, or a schedule's tick doubled or
// missed, or a batch run's request was sent or its answer committed twice,
// or, with STEPWISE_CHAOS_ROLLING=true,
// paused longer than the limit or when a worker did not exit after
// SIGTERM. It prints the figures; with STEPWISE_CHAOS_JSON=FILE it also
// writes them as JSON.
func TestChaos(t *testing.T) {
	cfg, err := chaos.ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logf = func(format string, args ...any) {
		t.Logf("%s "+format, append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		// End before the test binary's timeout, which would kill the
		// harness without letting it stop its processes.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	rep, err := chaos.Run(ctx, cfg)
	if rep != nil {
		rep.WriteTable(os.Stdout)
		if cfg.JSONPath != "" {
			if err := rep.WriteJSON(cfg.JSONPath); err != nil {
				t.Error(err)
			}
		}
	}
	if err != nil {
		t.Fatalf("the harness could not finish: %v", err)
	}
	if rep.Failed() {
		t.Fatalf("%d stuck, %d wrong, %d double-committed, %d double-started, %d paused too long of %d runs (%d submitted); %d tick problems; batch: %d requests and %d answers twice",
			rep.Stuck, rep.Wrong, rep.DoubleCommits, rep.DoubleStarted, rep.Paused, rep.Runs, rep.Submitted, len(rep.TickProblems), rep.BatchRequestsTwice, rep.BatchAnswersTwice)
	}
}
