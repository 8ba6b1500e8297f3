package store_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// BenchmarkStore_step measures what Redis spends on one agent step with
// one tool call, the store's calls alone (no Kafka, no model): the step's
// commit, the call's claim and finish, and the end that claims the next
// step, on a private redis-server and one run that never ends. It reports
// Redis's own CPU (INFO cpu, user and system) and the commands it ran
// (INFO commandstats, those inside scripts included) per step, which the
// pipeline's benchmarks cannot tell apart from the noise of a shared
// machine: one client, one step at a time, nothing else on the server.
//
//	go test -run '^$' -bench BenchmarkStore_step -benchtime 5000x -count 5 ./pipeline/store/
func BenchmarkStore_step(b *testing.B) {
	rdb := testinfra.RedisServerClient(b)
	ctx := context.Background()
	st := store.New(rdb)
	now := time.Now()
	run := newRun("bench")
	if _, _, err := st.CreateRun(ctx, run, input, now); err != nil {
		b.Fatal(err)
	}
	if _, err := st.ClaimStep(ctx, run.ID, 0, lease("w", now.Add(time.Hour)), now); err != nil {
		b.Fatal(err)
	}
	cpu0, cmds0 := redisWork(b, rdb)
	b.ResetTimer()
	for step := range b.N {
		oneCallStep(ctx, b, st, run.ID, step, "c"+strconv.Itoa(step), now)
	}
	b.StopTimer()
	reportRedisWork(b, rdb, cpu0, cmds0, b.N)
}

// oneCallStep runs step of run runID as the pipeline does with one tool
// call, callID: the commit, the call's claim and finish, and the end that
// claims the next step.
func oneCallStep(ctx context.Context, b *testing.B, st *store.Store, runID string, step int, callID string, now time.Time) {
	b.Helper()
	if _, _, err := st.CommitStep(ctx, runID, step, "w", commitOf(callID), now); err != nil {
		b.Fatal(err)
	}
	if _, err := st.ClaimCall(ctx, runID, callID, lease("t", now.Add(time.Hour)), now); err != nil {
		b.Fatal(err)
	}
	if _, err := st.FinishCall(ctx, runID, callID, "t", succeeded, now); err != nil {
		b.Fatal(err)
	}
	tool := pipeline.Message{Role: pipeline.RoleTool, Content: `{"ok":true}`, ToolCallID: callID}
	end := store.StepEnd{ToolMessages: []pipeline.Message{tool}, CallIDs: []string{callID}}
	if _, claimed, err := st.EndStepAndClaim(ctx, runID, step, end, lease("w", now.Add(time.Hour)), now); err != nil || claimed == nil {
		b.Fatalf("EndStepAndClaim(step %d) = %v, %v", step, claimed, err)
	}
}

// reportRedisWork reports Redis's CPU and commands since cpu0 and cmds0
// (redisWork) over steps.
func reportRedisWork(b *testing.B, rdb *redis.Client, cpu0 time.Duration, cmds0 int64, steps int) {
	b.Helper()
	cpu1, cmds1 := redisWork(b, rdb)
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(steps), "redis-µs/step")
	b.ReportMetric(float64(cmds1-cmds0)/float64(steps), "commands/step")
}

// redisWork reads the server's CPU time so far and the commands it has
// run (the two INFO reads themselves included, a constant).
func redisWork(b *testing.B, rdb *redis.Client) (time.Duration, int64) {
	b.Helper()
	info, err := rdb.Info(context.Background(), "cpu", "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	var cmds int64
	for line := range strings.SplitSeq(info, "\r\n") {
		name, value, ok := strings.Cut(line, ":")
		switch {
		case !ok:
		case name == "used_cpu_user" || name == "used_cpu_sys":
			s, err := strconv.ParseFloat(value, 64)
			if err != nil {
				b.Fatalf("INFO %s: %v", line, err)
			}
			cpu += time.Duration(s * float64(time.Second))
		case strings.HasPrefix(name, "cmdstat_"):
			calls, _, _ := strings.Cut(strings.TrimPrefix(value, "calls="), ",")
			n, err := strconv.ParseInt(calls, 10, 64)
			if err != nil {
				b.Fatalf("INFO %s: %v", line, err)
			}
			cmds += n
		}
	}
	if cpu == 0 {
		b.Fatalf("INFO cpu has no used_cpu_user: %q", info)
	}
	return cpu, cmds
}

// BenchmarkStore_run measures what Redis spends on a run of the hot-path
// issue's workload, the store's calls alone: a run started, nine steps of
// one tool call (commit, the call's claim and finish, the end that claims
// the next step) and a tenth without calls that ends it, then its result
// marked published (which retires it). One iteration is one run; the
// figures are per step, as BenchmarkStore_step's. With STEPWISE_TEST_REDIS
// set it uses that Redis instead of a private one, so that a redis-server
// under valgrind can count the instructions a step costs (docs/benchmarks.md).
//
//	go test -run '^$' -bench BenchmarkStore_run -benchtime 500x -count 5 ./pipeline/store/
func BenchmarkStore_run(b *testing.B) {
	newClient := testinfra.RedisServerClient // not miniredis: it reports no CPU
	if os.Getenv(testinfra.EnvRedis) != "" {
		newClient = testinfra.RedisClient // the given Redis
	}
	rdb := newClient(b)
	ctx := context.Background()
	st := store.New(rdb)
	now := time.Now()
	prefix := strconv.FormatInt(now.UnixNano(), 36)
	const steps = 10
	cpu0, cmds0 := redisWork(b, rdb)
	b.ResetTimer()
	for i := range b.N {
		run := newRun(prefix + "-" + strconv.Itoa(i))
		if _, _, err := st.StartRun(ctx, run, input, now.Add(time.Minute), now); err != nil {
			b.Fatal(err)
		}
		if _, _, err := st.ClaimStepWithMessages(ctx, run.ID, 0, lease("w", now.Add(time.Hour)), now); err != nil {
			b.Fatal(err)
		}
		for step := range steps - 1 {
			oneCallStep(ctx, b, st, run.ID, step, "call_"+strconv.Itoa(step), now)
		}
		end := store.StepEnd{Finish: &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}, CallIDs: []string{}}
		if _, _, err := st.CommitAndEnd(ctx, run.ID, steps-1, "w", commitOf(), end, now); err != nil {
			b.Fatal(err)
		}
		if err := st.MarkPublished(ctx, run, now); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportRedisWork(b, rdb, cpu0, cmds0, b.N*steps)
}
