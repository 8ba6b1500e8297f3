package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stepwise-run/stepwise/internal/tooling/bench"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

// The bench on a broker and a redis-server of the test's: its report has
// every field, for each scenario run, and counts that add up. Rates are
// not asserted: they are this machine's.
func TestBench_reports_every_field_of_each_scenario(t *testing.T) {
	var trace bytes.Buffer
	rep, err := bench.Run(context.Background(), bench.Options{
		Scenarios: []string{"latency", "fanout", "memory", "decisions", "llm-bound", "run-requests"}, Runs: 3,
		Kafka: testinfra.Kafka(t)[0], Redis: testinfra.RedisServer(t), Trace: &trace,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(trace.Bytes(), []byte("go 1.")) {
		t.Errorf("no runtime trace of the first scenario: %d bytes, %.16q", trace.Len(), trace.Bytes())
	}
	if len(rep.Scenarios) != 6 || rep.Machine.Cores < 1 || rep.Machine.RedisVersion == "" {
		t.Fatalf("report %+v", rep)
	}
	lat, fan := rep.Scenarios[0], rep.Scenarios[1]
	if lat.Scenario != "latency" || lat.Runs != 3 || lat.Steps != 9 || lat.Calls != 12 || fan.Calls != 60 {
		t.Fatalf("scenarios %+v", rep.Scenarios)
	}
	if mem := rep.Scenarios[2]; mem.RedisBytesPerParkedCall == -1 || mem.Steps != 3 {
		t.Errorf("memory: %+v", mem)
	}
	// A parked run's keys, each measured: its hash, conversation, events,
	// call and step list, none of them empty; no other scenario's.
	kinds := slices.Sorted(maps.Keys(rep.Scenarios[2].RedisBytesByKey))
	if !slices.Equal(kinds, []string{"call", "events", "msgs", "run", "step"}) ||
		slices.ContainsFunc(kinds, func(k string) bool { return rep.Scenarios[2].RedisBytesByKey[k] < 64 }) {
		t.Errorf("memory: a parked run's keys %v", rep.Scenarios[2].RedisBytesByKey)
	}
	if rep.Scenarios[0].RedisBytesByKey != nil {
		t.Errorf("latency: keys measured %v", rep.Scenarios[0].RedisBytesByKey)
	}
	if dec := rep.Scenarios[3]; dec.Steps != 3 || dec.P50ms <= 0 || dec.RedisRoundTripsPerStep <= 0 ||
		dec.ResumedP50ms <= 0 || dec.ResumedP99ms < dec.ResumedP50ms || dec.AllResumedMs < dec.ResumedP99ms || dec.ResumedP99ms > dec.P99ms {
		t.Errorf("decisions: %+v", dec)
	}
	if lat := rep.Scenarios[0]; lat.ResumedP50ms != -1 || lat.AllResumedMs != -1 || lat.RunsInFlight != -1 {
		t.Errorf("latency reports resume times: %+v", lat)
	}
	if llm := rep.Scenarios[4]; llm.Steps != 9 || llm.LittlesLawFraction <= 0 || llm.LittlesLawFraction > 1 || llm.RunsInFlight <= 0 || llm.RunsInFlight > 3 {
		t.Errorf("llm-bound: %+v", llm)
	}
	// Runs requested on Kafka: each one admitted and done, the lag gone.
	// The active runs counted are the store's, earlier scenarios' not yet
	// retired included.
	if rr := rep.Scenarios[5]; rr.Steps != 9 || rr.MaxActiveRuns < 1 || rr.AdmissionLimit != 2000 || rr.MaxActiveRuns > int64(rr.AdmissionLimit) || rr.LagEnd != 0 {
		t.Errorf("run-requests: %+v", rr)
	}
	if lat := rep.Scenarios[0]; lat.MaxActiveRuns != -1 || lat.LagEnd != -1 {
		t.Errorf("latency reports admission: %+v", lat)
	}
	for _, s := range rep.Scenarios[:2] {
		if s.StepsPerS <= 0 || s.P50ms <= 0 || s.P99ms < s.P50ms || s.RedisRoundTripsPerStep <= 0 || s.KafkaPublishesPerStep <= 0 ||
			s.AllocBytesPerStep <= 0 || s.RedisCommandsPerStep <= s.RedisRoundTripsPerStep || s.RedisCPUmsPerStep < 0 || s.ProcessCPUmsPerStep <= 0 {
			t.Errorf("%s: %+v", s.Scenario, s)
		}
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Scenarios []map[string]any `json:"scenarios"`
	}
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"steps_per_s", "calls_per_s", "p50_ms", "p99_ms", "redis_round_trips_per_step", "kafka_publishes_per_step",
		"alloc_bytes_per_step", "redis_bytes_per_parked_call", "redis_commands_per_step", "redis_cpu_ms_per_step"} {
		if _, ok := raw.Scenarios[0][f]; !ok {
			t.Errorf("the JSON report lacks %s", f)
		}
	}
	if _, err := bench.Run(context.Background(), bench.Options{Scenarios: []string{"nope"}}); err == nil {
		t.Error("an unknown scenario ran")
	}
}

// one-run measures each step of its one run of 50 calls: 49 step times,
// from one call's publish to the next.
func TestBench_one_run_reports_the_time_of_each_step(t *testing.T) {
	rep, err := bench.Run(context.Background(), bench.Options{
		Scenarios: []string{"one-run"}, Kafka: testinfra.Kafka(t)[0], Redis: testinfra.RedisServer(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if one := rep.Scenarios[0]; one.Runs != 1 || one.Steps != 51 || one.Calls != 50 || one.Samples != 49 || one.P50ms <= 0 || one.P99ms < one.P50ms {
		t.Errorf("one-run: %+v", one)
	}
}

// batch-inference steps its runs through the fake Batch API it serves:
// each of a run's three steps waits for a batch job, so a wave of steps
// takes one job at least, every run ends, and its cost is read from the
// runs' results; batch-inference-live runs the same agent live, at a
// cost the batch's does not exceed.
func TestBench_batch_inference_runs_through_provider_batch_jobs_beside_a_live_counterpart(t *testing.T) {
	rep, err := bench.Run(context.Background(), bench.Options{
		Scenarios: []string{"batch-inference", "batch-inference-live"}, Runs: 20, Kafka: testinfra.Kafka(t)[0], Redis: testinfra.RedisServer(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	batch, live := rep.Scenarios[0], rep.Scenarios[1]
	requests := 0
	for _, n := range batch.BatchJobRequests {
		requests += n
	}
	if batch.RunsDone != 20 || batch.Steps != 60 || batch.BatchJobs < 3 || requests != 60 || batch.RunsPerHour <= 0 {
		t.Errorf("batch-inference: %+v", batch)
	}
	if live.RunsDone != 20 || live.Steps != 60 || live.BatchJobs != -1 || live.CostPer1000Runs <= 0 {
		t.Errorf("batch-inference-live: %+v", live)
	}
	if batch.CostPer1000Runs <= 0 || batch.CostPer1000Runs > live.CostPer1000Runs {
		t.Errorf("cost per 1,000 runs: batch %g, live %g", batch.CostPer1000Runs, live.CostPer1000Runs)
	}
}

// --plot writes the two charts as PNG files.
func TestBench_plots_throughput_and_the_latency_CDF(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the throughput workload at five concurrencies")
	}
	dir := t.TempDir()
	if _, err := bench.Run(context.Background(), bench.Options{
		Scenarios: []string{"latency"}, Runs: 5, PlotDir: dir,
		Kafka: testinfra.Kafka(t)[0], Redis: testinfra.RedisServer(t),
	}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"throughput.png", "latency-cdf.png"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s: %d bytes, %v", name, len(b), err)
		}
	}
}

// On a Redis Cluster the server-side counts are every primary's, summed,
// with the busiest primary's CPU beside them: a step costs as many
// commands on three primaries as on one server.
func TestBench_counts_every_primary_of_a_cluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-primary Redis Cluster")
	}
	kafka := testinfra.Kafka(t)[0]
	run := func(url string) bench.Result {
		rep, err := bench.Run(context.Background(), bench.Options{Scenarios: []string{"latency"}, Runs: 3, Kafka: kafka, Redis: url})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Scenarios[0]
	}
	one := run(testinfra.RedisServer(t))
	three := run(testinfra.RedisCluster(t, 3, 0).URL)
	if one.RedisPrimaries != 1 || three.RedisPrimaries != 3 {
		t.Fatalf("primaries: %d on one server, %d on the cluster", one.RedisPrimaries, three.RedisPrimaries)
	}
	// Nine steps each: a sweeper tick more on one side moves the count a
	// step by one or two; reading one primary of three would cut it to a
	// third.
	if ratio := three.RedisCommandsPerStep / one.RedisCommandsPerStep; ratio < 0.8 || ratio > 1.25 {
		t.Errorf("commands a step: %.1f on one server, %.1f on three primaries", one.RedisCommandsPerStep, three.RedisCommandsPerStep)
	}
	if three.RedisBusiestCPUmsPerStep <= 0 || three.RedisBusiestCPUmsPerStep >= three.RedisCPUmsPerStep {
		t.Errorf("busiest primary %.3f ms of %.3f ms CPU a step", three.RedisBusiestCPUmsPerStep, three.RedisCPUmsPerStep)
	}
}

// Without a broker the workers meet on an in-process channel: the bench
// is given no Kafka and starts none, and its runs still end, the parked
// ones by their decisions. What needs a broker is refused, saying why.
func TestBench_runs_without_a_broker_on_an_in_process_channel(t *testing.T) {
	redisURL := testinfra.RedisServer(t)
	rep, err := bench.Run(context.Background(), bench.Options{Scenarios: []string{"ten-steps", "decisions"}, Runs: 4, NoBroker: true, Redis: redisURL})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Machine.Kafka != "none" {
		t.Errorf("kafka %q, want none", rep.Machine.Kafka)
	}
	if ten, dec := rep.Scenarios[0], rep.Scenarios[1]; ten.Steps != 40 || ten.Calls != 36 || dec.Steps != 4 || dec.RunsDone != 4 {
		t.Errorf("ten-steps %+v, decisions %+v", ten, dec)
	}
	for name, o := range map[string]bench.Options{
		"Kafka's brokers":  {Scenarios: []string{"ten-steps"}, NoBroker: true, Kafka: "127.0.0.1:9", Redis: redisURL},
		"tool workers":     {Scenarios: []string{"ten-steps"}, NoBroker: true, ToolWorkers: 1, Redis: redisURL},
		"run-requests lag": {Scenarios: []string{"run-requests"}, NoBroker: true, Redis: redisURL},
	} {
		if _, err := bench.Run(context.Background(), o); err == nil {
			t.Errorf("no broker with %s: no error", name)
		} else {
			t.Logf("no broker with %s: %v", name, err)
		}
	}
}
