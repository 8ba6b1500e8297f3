package bench_test

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/bench"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

// envToolWorker makes the test binary, re-executed by the bench, run a
// tool worker (TestMain); envStepWorker, a step worker, when its first
// argument is "stepworker".
const (
	envToolWorker = "STEPWISE_BENCH_TEST_TOOLWORKER"
	envStepWorker = "STEPWISE_BENCH_TEST_STEPWORKER"
)

// TestMain runs the tests, or, when the bench re-executes the test binary
// as one of its worker processes, that worker.
func TestMain(m *testing.M) {
	prog, args := app.Program{}, os.Args[1:]
	switch {
	case os.Getenv(envStepWorker) == "1" && len(args) > 0 && args[0] == "stepworker":
		prog, args = app.StepWorker(nil), args[1:]
	case os.Getenv(envToolWorker) == "1":
		prog = app.ToolWorker(nil)
	default:
		os.Exit(m.Run())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := prog.Exec(ctx, args); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
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

// The scale-out scenario with the steps and the calls each in two
// processes, on a Redis Cluster of three primaries: every run done, and
// the CPU of each part reported apart.
func TestBench_scales_out_to_worker_processes_and_a_Redis_Cluster(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("a Redis Cluster needs redis-cli (apt-get install -y redis-tools)")
	}
	t.Setenv(envToolWorker, "1")
	t.Setenv(envStepWorker, "1")
	rep, err := bench.Run(context.Background(), bench.Options{
		Scenarios: []string{"scale-out"}, Runs: 8, Kafka: testinfra.Kafka(t)[0],
		StepWorkers: 2, StepWorkerCommand: []string{os.Args[0], "stepworker"},
		ToolWorkers: 2, ToolWorkerCommand: []string{os.Args[0]},
		RedisPrimaries: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	so := rep.Scenarios[0]
	if rep.Machine.StepWorkers != 2 || rep.Machine.ToolWorkers != 2 || so.Steps != 80 || so.RedisPrimaries != 3 {
		t.Fatalf("report %+v, %+v", rep.Machine, so)
	}
	for _, p := range []string{"bench", "stepworkers", "toolworkers", "redis"} {
		if ms, ok := so.CPUmsPerStepByPart[p]; !ok || ms < 0 {
			t.Errorf("the CPU of %s: %v in %v", p, ms, so.CPUmsPerStepByPart)
		}
	}
}
