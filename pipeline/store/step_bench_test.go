package store_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
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
	ctx, now := context.Background(), time.Now()
	rdb, st, run := claimedBenchRun(b, now)
	cpu0, cmds0 := redisWork(b, rdb)
	b.ResetTimer()
	for step := range b.N {
		if err := oneCallStep(ctx, st, run.ID, step, "c"+strconv.Itoa(step), now); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportRedisWork(b, rdb, cpu0, cmds0, b.N)
}

// oneCallStep runs step of run runID as the pipeline does with one tool
// call, callID: the commit, the call's claim and finish, and the end that
// claims the next step. It returns an error rather than failing b, so that
// the goroutines of a parallel benchmark can run it.
func oneCallStep(ctx context.Context, st *store.Store, runID string, step int, callID string, now time.Time) error {
	if _, _, err := st.CommitStep(ctx, runID, step, "w", commitOf(callID), now); err != nil {
		return err
	}
	if _, err := st.ClaimCall(ctx, runID, callID, lease("t", now.Add(time.Hour)), now); err != nil {
		return err
	}
	if _, err := st.FinishCall(ctx, runID, callID, "t", succeeded, now); err != nil {
		return err
	}
	tool := pipeline.Message{Role: pipeline.RoleTool, Content: `{"ok":true}`, ToolCallID: callID}
	end := store.StepEnd{ToolMessages: []pipeline.Message{tool}, CallIDs: []string{callID}}
	if _, claimed, err := st.EndStepAndClaim(ctx, runID, step, end, lease("w", now.Add(time.Hour)), now); err != nil || claimed == nil {
		return fmt.Errorf("EndStepAndClaim(step %d) = %v, %v", step, claimed, err)
	}
	return nil
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

// runSteps is the number of steps of tenStepRun's run.
const runSteps = 10

// tenStepRun runs a run of the hot-path issue's workload through the
// store alone, as the pipeline would: the run started, nine steps of one
// tool call (oneCallStep) and a tenth without calls that ends it, then its
// result marked published (which retires it).
func tenStepRun(ctx context.Context, st *store.Store, id string, now time.Time) error {
	run := newRun(id)
	if _, _, err := st.StartRun(ctx, run, input, now.Add(time.Minute), now); err != nil {
		return err
	}
	if _, _, err := st.ClaimStepWithMessages(ctx, run.ID, 0, lease("w", now.Add(time.Hour)), now); err != nil {
		return err
	}
	for step := range runSteps - 1 {
		if err := oneCallStep(ctx, st, run.ID, step, "call_"+strconv.Itoa(step), now); err != nil {
			return err
		}
	}
	end := store.StepEnd{Finish: &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}, CallIDs: []string{}}
	if _, _, err := st.CommitAndEnd(ctx, run.ID, runSteps-1, "w", commitOf(), end, now); err != nil {
		return err
	}
	return st.MarkPublished(ctx, run, now)
}

// benchStore is the store of the run benchmarks: on the Redis that
// STEPWISE_TEST_REDIS names when it is set (a redis-server under valgrind,
// or one pinned to a core), else on a private redis-server (not miniredis:
// it reports no CPU); with the retention a deployment has by default, so
// that an ended run's keys are given their time to live as they are there.
func benchStore(b *testing.B) (*store.Store, *redis.Client) {
	newClient := testinfra.RedisServerClient
	if os.Getenv(testinfra.EnvRedis) != "" {
		newClient = testinfra.RedisClient
	}
	rdb := newClient(b)
	return store.New(rdb, store.WithRetention(config.DefaultRetention)), rdb
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
	st, rdb := benchStore(b)
	ctx := context.Background()
	now := time.Now()
	prefix := strconv.FormatInt(now.UnixNano(), 36)
	cpu0, cmds0 := redisWork(b, rdb)
	b.ResetTimer()
	for i := range b.N {
		if err := tenStepRun(ctx, st, prefix+"-"+strconv.Itoa(i), now); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportRedisWork(b, rdb, cpu0, cmds0, b.N*runSteps)
}

// BenchmarkStore_runs_at_once measures what one redis-server carries: the
// runs of BenchmarkStore_run, 32 a core of the benchmark at once, as many
// workers would send them. Besides Redis's CPU and commands a step it
// reports the steps a second and the share of one core Redis used
// meanwhile (redis-cpu%); near 100 %, the steps a second are what the
// server carries. On a machine where the benchmark and the server share
// the cores, pin them apart (scripts/redis-capacity).
//
//	go test -run '^$' -bench BenchmarkStore_runs_at_once -benchtime 2000x -count 3 ./pipeline/store/
func BenchmarkStore_runs_at_once(b *testing.B) {
	st, rdb := benchStore(b)
	ctx := context.Background()
	now := time.Now()
	prefix := strconv.FormatInt(now.UnixNano(), 36)
	var runs atomic.Int64
	cpu0, cmds0 := redisWork(b, rdb)
	start := time.Now()
	b.ResetTimer()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := tenStepRun(ctx, st, prefix+"-"+strconv.FormatInt(runs.Add(1), 10), now); err != nil {
				b.Error(err) // not Fatal: this is not the benchmark's goroutine
				return
			}
		}
	})
	b.StopTimer()
	elapsed := time.Since(start)
	cpu1, _ := redisWork(b, rdb)
	b.ReportMetric(float64(b.N*runSteps)/elapsed.Seconds(), "steps/s")
	b.ReportMetric(100*(cpu1-cpu0).Seconds()/elapsed.Seconds(), "redis-cpu%")
	reportRedisWork(b, rdb, cpu0, cmds0, b.N*runSteps)
}

// BenchmarkStore_step_by_operation is BenchmarkStore_step with the fan-in's
// read of the step (Snapshot) the pipeline makes before the end, and
// Redis's script time (EVALSHA's usec in INFO commandstats, the commands
// the script runs included) reported for each operation apart, in µs a
// call: where a step's Redis time goes (docs/benchmarks.md, "Issue 36").
//
//	go test -run '^$' -bench Store_step_by_operation -benchtime 3000x ./pipeline/store/
func BenchmarkStore_step_by_operation(b *testing.B) {
	ctx, now := context.Background(), time.Now()
	rdb, st, run := claimedBenchRun(b, now)
	spent := map[string]int64{}
	op := func(name string, f func() error) {
		u0 := scriptUsec(b, rdb)
		if err := f(); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		spent[name] += scriptUsec(b, rdb) - u0
	}
	b.ResetTimer()
	for step := range b.N {
		callID := "c" + strconv.Itoa(step)
		op("commit", func() error { _, _, err := st.CommitStep(ctx, run.ID, step, "w", commitOf(callID), now); return err })
		op("claim_call", func() error {
			_, err := st.ClaimCall(ctx, run.ID, callID, lease("t", now.Add(time.Hour)), now)
			return err
		})
		op("finish", func() error { _, err := st.FinishCall(ctx, run.ID, callID, "t", succeeded, now); return err })
		op("fan_in_read", func() error { _, err := st.Snapshot(ctx, run.ID, time.Minute, now); return err })
		tool := pipeline.Message{Role: pipeline.RoleTool, Content: `{"ok":true}`, ToolCallID: callID}
		end := store.StepEnd{ToolMessages: []pipeline.Message{tool}, CallIDs: []string{callID}}
		op("end_and_claim", func() error {
			_, _, err := st.EndStepAndClaim(ctx, run.ID, step, end, lease("w", now.Add(time.Hour)), now)
			return err
		})
	}
	b.StopTimer()
	for name, usec := range spent {
		b.ReportMetric(float64(usec)/float64(b.N), name+"-redis-µs/op")
	}
}

// scriptUsec is the time Redis has spent in EVALSHA since it started, in
// µs.
func scriptUsec(b *testing.B, rdb *redis.Client) int64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	_, rest, ok := strings.Cut(info, "cmdstat_evalsha:")
	if !ok {
		return 0
	}
	_, rest, _ = strings.Cut(rest, "usec=")
	usec, _, _ := strings.Cut(rest, ",")
	n, err := strconv.ParseInt(usec, 10, 64)
	if err != nil {
		b.Fatalf("commandstats: evalsha usec %q", usec)
	}
	return n
}

// claimedBenchRun is a private redis-server, a store on it, and a run whose
// step 0 is claimed by "w" at now, for a benchmark of its steps.
func claimedBenchRun(b *testing.B, now time.Time) (*redis.Client, *store.Store, pipeline.Run) {
	b.Helper()
	rdb := testinfra.RedisServerClient(b)
	ctx := context.Background()
	st := store.New(rdb)
	run := newRun("bench")
	if _, _, err := st.CreateRun(ctx, run, input, now); err != nil {
		b.Fatal(err)
	}
	if _, err := st.ClaimStep(ctx, run.ID, 0, lease("w", now.Add(time.Hour)), now); err != nil {
		b.Fatal(err)
	}
	return rdb, st, run
}
