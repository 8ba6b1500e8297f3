package bench_test

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/bench"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

// envToolWorker makes the test binary, re-executed by the bench, run a
// tool worker (TestMain).
const envToolWorker = "STEPWISE_BENCH_TEST_TOOLWORKER"

// TestMain runs the tests, or, when the bench re-executes the test binary
// as one of its tool worker processes, that tool worker.
func TestMain(m *testing.M) {
	if os.Getenv(envToolWorker) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		if err := app.ToolWorker(nil).Exec(ctx, os.Args[1:]); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// With --tool-workers, the calls run in that many processes, which join
// the tool workers' consumer group before the bench begins. The bench's
// own process runs none: the claims and finishes of its 20 calls a step,
// 14 of the process's Redis round trips a step with the tool worker in
// it, are not its own.
func TestBench_runs_the_calls_in_tool_worker_processes(t *testing.T) {
	t.Setenv(envToolWorker, "1")
	rep, err := bench.Run(context.Background(), bench.Options{
		Scenarios: []string{"fanout"}, Runs: 4, ToolWorkers: 2, ToolWorkerCommand: []string{os.Args[0]},
		Kafka: testinfra.Kafka(t)[0], Redis: testinfra.RedisServer(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if fan := rep.Scenarios[0]; rep.Machine.ToolWorkers != 2 || fan.Calls != 80 || fan.CallsPerS <= 0 || fan.RedisRoundTripsPerStep > 7 {
		t.Fatalf("report %+v, %+v", rep.Machine, fan)
	}
}

// A tool worker that cannot start, or more of them than partitions, is an
// error that says so, not a bench that waits for calls nobody runs.
func TestBench_says_why_its_tool_worker_processes_did_not_start(t *testing.T) {
	t.Setenv(envToolWorker, "1")
	kafka, redis := testinfra.Kafka(t)[0], testinfra.RedisServer(t)
	_, err := bench.Run(context.Background(), bench.Options{
		Scenarios: []string{"fanout"}, Runs: 1, ToolWorkers: 1, ToolWorkerCommand: []string{os.Args[0], "--no-such-flag"},
		Kafka: kafka, Redis: redis,
	})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Errorf("a tool worker that exits at once: %v", err)
	}
	_, err = bench.Run(context.Background(), bench.Options{
		Scenarios: []string{"fanout"}, Runs: 1, ToolWorkers: 9, ToolWorkerCommand: []string{os.Args[0]}, Kafka: kafka, Redis: redis,
	})
	if err == nil || !strings.Contains(err.Error(), "9 tool worker processes for 8 partitions") {
		t.Errorf("more tool workers than partitions: %v", err)
	}
	if _, err := bench.Run(context.Background(), bench.Options{Scenarios: []string{"fanout"}, ToolWorkers: -1}); err == nil ||
		!strings.Contains(err.Error(), "-1 tool worker processes") {
		t.Errorf("a negative count of tool workers: %v", err)
	}
}
