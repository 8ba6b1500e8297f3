package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/fakebatch"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/topics"
)

// A Scenario is one fixed workload.
type Scenario struct {
	Name        string
	What        string
	model       string // the runs' script model
	steps       int    // steps of one run
	calls       int    // tool calls of one run
	sequential  bool   // one run at a time (latency) rather than all at once
	together    bool   // its runs are requested together, as the gateway's batch endpoint starts them (requestTogether)
	parks       bool   // its runs park a call and wait: measured once all wait
	decides     bool   // its runs park call D, then are decided at once: the decisions are measured
	agent       string // the runs' agent when not the script model's "assistant": no model of their own
	keys        bool   // the keys of its last run are measured (KeyBytes)
	requested   bool   // its runs are requested on the run-requests topic, admitted by the gateway under run_requests.max_active
	stepTimes   bool   // its latencies are its steps' own, from one tool-call publish of a run to the next (stepTimes)
	fake        bool   // its agent's model is OpenAI's API as the fake the bench serves (fakebatch) answers it, at a price: its cost is reported
	batched     bool   // its agent's model is in batch mode on the fake: the provider's batch jobs are counted
	latency     time.Duration
	defaultRuns int
}

// Scenarios are the workloads `stepwise bench` knows.
var Scenarios = []Scenario{
	{Name: "throughput", What: "runs of 3 steps (2 parallel calls in each of the first two) all at once: steps per second",
		model: threeSteps(`{"name":"sleep","arguments":{"ms":30}}`), steps: 3, calls: 4, defaultRuns: 200},
	{Name: "latency", What: "runs of 3 steps (2 parallel echo calls in each of the first two) one at a time: the unloaded step latency",
		model: threeSteps(`{"name":"echo","arguments":{"n":4}}`), steps: 3, calls: 4, sequential: true, defaultRuns: 50},
	{Name: "one-run", What: "one run of an agent of 50 steps (one echo call in each), then its answer, alone: each step's time, as DBOS's latency mode measures it",
		agent: "fifty", steps: 51, calls: 50, sequential: true, stepTimes: true, defaultRuns: 1},
	{Name: "ten-steps", What: "runs of an agent of 10 steps (one echo call in each of the first nine) all at once: the hot-path issue's workload",
		agent: "stepper", steps: 10, calls: 9, keys: true, defaultRuns: 256},
	{Name: "scale-out", What: "1,024 runs of the ten-steps agent at once, for --step-workers, --tool-workers and --redis-primaries: steps per second and the CPU of each part",
		agent: "stepper", steps: 10, calls: 9, defaultRuns: 1024},
	{Name: "long-runs", What: "runs of an agent of 300 steps (one echo call in each but the last) all at once: what a step costs deep in a run",
		agent: "long", steps: 300, calls: 299, defaultRuns: 32},
	{Name: "fanout", What: "runs of one step of 20 no-op calls all at once: calls per second",
		model: wideStep(20), steps: 2, calls: 20, defaultRuns: 50},
	{Name: "memory", What: "runs of an agent that park a call for approval, all at once: the Redis memory a parked call holds",
		agent: "approver", steps: 1, calls: 1, parks: true, keys: true, defaultRuns: 2000}, // enough that the keyspace table doubling once within them is a few bytes a call
	{Name: "llm-bound", What: "runs on a model that takes 500 ms a step, requested together: the share of the Little's-law bound reached",
		agent: "llm", latency: 500 * time.Millisecond, steps: 3, calls: 2, together: true, defaultRuns: 1000},
	{Name: "decisions", What: "runs parked on a call, then all decided at once: from a decision's publish to its run's result",
		model: `{"provider":"script","turns":[{"text":"needs approval","tool_calls":[{"id":"D","name":"approve","arguments":{"amount":120}}]},{"text":"done"}]}`,
		steps: 1, calls: 1, decides: true, defaultRuns: 1000},
	{Name: "batch-inference", What: "runs of an agent of 3 steps (one echo call in each of the first two) whose model is in batch mode, all at once, on a fake OpenAI Batch API: the provider's batch jobs a wave of steps takes, runs an hour and their cost",
		agent: "bulk", steps: 3, calls: 2, fake: true, batched: true, defaultRuns: 1000},
	{Name: "batch-inference-live", What: "the batch-inference workload with batch mode off, on the fake's live API answering after the batch's delay: runs an hour and their cost, against batch-inference's",
		agent: "bulk-live", steps: 3, calls: 2, fake: true, defaultRuns: 1000},
	{Name: "run-requests", What: "runs on a model that takes 500 ms a step, requested on Kafka all at once and admitted 2000 at a time: the most runs active, and the lag left",
		agent: "llm", steps: 3, calls: 2, together: true, requested: true, defaultRuns: 10000},
}

// admissionLimit is run_requests.max_active in benchConfig: the run-requests
// scenario's backlog waits in Kafka beyond it.
const admissionLimit = 2000

// threeSteps is a script of 3 steps: two parallel echo calls, then slow
// (a tool's time: a sleep for throughput, an echo where the pipeline's own
// latency is measured) beside an echo, then an answer.
func threeSteps(slow string) string {
	return `{"provider":"script","turns":[
	{"text":"step one","tool_calls":[{"name":"echo","arguments":{"n":1}},{"name":"echo","arguments":{"n":2}}]},
	{"text":"step two","tool_calls":[` + slow + `,{"name":"echo","arguments":{"n":3}}]},
	{"text":"done"}]}`
}

// oneCallTurns are the turns of a script of n steps: one echo call in
// each but the last, then an answer.
func oneCallTurns(n int) string {
	turns := make([]string, n)
	for i := range n - 1 {
		turns[i] = fmt.Sprintf(`{text: "step %d", tool_calls: [{name: echo, arguments: {"n": %d}}]}`, i, i)
	}
	turns[n-1] = `{text: done}`
	return strings.Join(turns, ", ")
}

func wideStep(n int) string {
	calls := make([]string, n)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"name":"echo","arguments":{"i":%d}}`, i)
	}
	return `{"provider":"script","turns":[{"text":"fan out","tool_calls":[` + strings.Join(calls, ",") + `]},{"text":"done"}]}`
}

// config is the stack's: production-like leases (no sweeper churn during
// the measurement) and pools big enough for the batches.
var benchConfig = `
kafka: {partitions: 8}
stepworker: {concurrency: 1024, lease: 30s, sweep_interval: 2s}
run_requests: {max_active: ` + fmt.Sprint(admissionLimit) + `}
toolworker: {concurrency: 256, lease: 30s}
agents:
  assistant:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo, sleep, approve]
  llm:
    model: {provider: synthetic, latency_ms: 500, tool_calls_per_step: 1, tool: echo, steps: 2}
    tools: [echo]
  stepper:
    model: {provider: script, turns: [` + oneCallTurns(10) + `]}
    tools: [echo]
  fifty:
    model: {provider: script, turns: [` + oneCallTurns(51) + `]}
    tools: [echo]
  long:
    model: {provider: script, turns: [` + oneCallTurns(300) + `]}
    tools: [echo]
  approver:
    model: {provider: script, turns: [{text: needs approval, tool_calls: [{name: approve, arguments: {amount: 120}}]}, {text: done}]}
    tools: [approve]
tools:
  approve: {executor: {builtin: echo}, permission: ask}
`

// batchKeyEnv names the API key of the fake OpenAI API the bench serves,
// which the bench sets when it is not.
const batchKeyEnv = "STEPWISE_BENCH_OPENAI_KEY"

// The fake OpenAI API's delays, which decide the batch-inference
// scenarios' runs an hour: a batch is in progress for BatchDelay after its
// creation, and a live chat completion takes as long, so that the two
// scenarios differ by what batching adds (the wait for the batch to
// close, the batcher's sweep cadence) and not by the provider.
const BatchDelay = time.Second

// BenchPrice is what the fake's model costs live (GPT-4.1's list price, USD
// a million tokens): each answer reports 10 prompt and 5 completion tokens.
var BenchPrice = config.Price{InputPerMTok: 2, OutputPerMTok: 8}

// configFor is benchConfig and, when fake, the agents of the
// batch-inference scenarios, whose model is on the fake OpenAI API at
// url, in batch mode (bulk) or not (bulk-live), and its price. Only then:
// the batcher bulk starts in every sweeper would add its reads to the
// other scenarios' counts.
func configFor(url string, fake bool) string {
	if !fake {
		return benchConfig
	}
	model := `{provider: openai, name: bench-model, base_url: "` + url + `/v1", api_key_env: ` + batchKeyEnv + `, max_retries: 0, stream: false`
	bulk := `  bulk:
    model: ` + model + `,
            batch: {window: 24h, max_wait: 500ms, max_requests: 50000}}
    tools: [echo]
  bulk-live:
    model: ` + model + `}
    tools: [echo]
`
	prices := fmt.Sprintf("budgets:\n  prices:\n    openai:bench-model: {input_per_mtok: %g, output_per_mtok: %g}\n", BenchPrice.InputPerMTok, BenchPrice.OutputPerMTok)
	return strings.Replace(benchConfig, "\ntools:\n", "\n"+bulk+"tools:\n", 1) + prices
}

// Options says what to run, and where.
type Options struct {
	Scenarios []string  // names; empty: all
	Runs      int       // runs per scenario; 0: each scenario's default
	Kafka     string    // brokers; "": an embedded broker
	Redis     string    // URL; "": a private redis-server if installed, else an embedded miniredis (no server-side counts)
	Progress  io.Writer // progress lines; nil: none
	PlotDir   string    // when set, PNG charts go there (plot.go)
	// ToolWorkers, when above 0, runs the tool calls in that many tool
	// worker processes (toolworkers.go) instead of in this one, each
	// started as ToolWorkerCommand followed by its flags (--config,
	// --kafka, --redis); by default this program's `toolworker` command.
	ToolWorkers       int
	ToolWorkerCommand []string
	// StepWorkers, when above 0, runs the steps in that many step worker
	// processes instead of in this one, as ToolWorkers does the calls; by
	// default this program's `stepworker` command.
	StepWorkers       int
	StepWorkerCommand []string
	// RedisPrimaries, when above 0, runs the stack on a private Redis
	// Cluster of that many primaries (redis-server and redis-cli
	// installed) instead of one redis-server; not with Redis.
	RedisPrimaries int
	// NoBroker connects the workers by an in-process Go channel
	// (app.InProcess) instead of Kafka: the same handlers, store and
	// Redis, and no broker, so that the difference from a run through the
	// broker is what the broker and its clients cost. Not with Kafka,
	// worker processes, or a scenario that reads a consumer group's lag.
	NoBroker bool
	// Trace, when set, gets a runtime trace (go tool trace reads it) of
	// the first chosen scenario's measured part: for a decisions
	// scenario, from the first decision's publish to the last result.
	Trace io.Writer
}

// checkNoBroker refuses what cannot run without a broker.
func (o Options) checkNoBroker(chosen []Scenario) error {
	switch {
	case !o.NoBroker:
		return nil
	case o.Kafka != "":
		return errors.New("no broker, or Kafka's brokers: give one of the two")
	case o.ToolWorkers > 0 || o.StepWorkers > 0:
		return errors.New("worker processes reach the bench through Kafka: without a broker every worker runs in the bench's process")
	}
	if i := slices.IndexFunc(chosen, func(sc Scenario) bool { return sc.requested }); i >= 0 {
		return fmt.Errorf("scenario %s reads its consumer group's lag in Kafka: it needs a broker", chosen[i].Name)
	}
	return nil
}

// Report is what `stepwise bench --json` writes.
type Report struct {
	Machine   Machine  `json:"machine"`
	Scenarios []Result `json:"scenarios"`
}

// Machine says where the figures come from.
type Machine struct {
	Cores        int    `json:"cores"`
	GoVersion    string `json:"go_version"`
	OS           string `json:"os"`
	RedisVersion string `json:"redis_version"` // "" for the embedded miniredis
	Kafka        string `json:"kafka"`         // "embedded", the brokers, or "none" (Options.NoBroker)
	Redis        string `json:"redis"`         // "a private redis-server", "embedded" (miniredis) or the URL given
	At           string `json:"at"`
	// ToolWorkers is how many tool worker processes ran the calls; 0: the
	// bench's own process did. With processes, the allocation, round trips
	// and publishes a step are the bench process's alone (the step worker's
	// and the broker's); Redis's commands and CPU are still all of them.
	ToolWorkers int `json:"tool_worker_processes"`
	StepWorkers int `json:"step_worker_processes"` // as ToolWorkers, for the steps
}

// Result is one scenario's figures. Counts per step are exact; rates and
// latencies are this machine's. -1: not measured (the Redis does not say,
// or the scenario does not park calls).
type Result struct {
	Scenario         string  `json:"scenario"`
	Runs             int     `json:"runs"`
	Steps            int     `json:"steps"`
	Calls            int     `json:"calls"`
	Seconds          float64 `json:"seconds"`
	StepsPerS        float64 `json:"steps_per_s"`
	CallsPerS        float64 `json:"calls_per_s"`
	P50ms            float64 `json:"p50_ms"` // of a step: a run's time from request to result over its steps (decisions: from the decision's publish to the result; one-run: each step's own)
	P99ms            float64 `json:"p99_ms"`
	Samples          int     `json:"samples"`                      // how many latencies p50 and p99 are of
	RunsDone         int     `json:"runs_done"`                    // runs that ended, all of them
	RunsPerHour      float64 `json:"runs_per_hour"`                // runs_done at the scenario's pace, an hour long
	BatchJobs        int     `json:"batch_jobs"`                   // the provider batch jobs the scenario's steps took (batch-inference; -1 otherwise)
	BatchJobRequests []int   `json:"batch_job_requests,omitempty"` // the requests of each of those jobs, in the order they were created: how the waves of steps split
	// CostPer1000Runs is what a thousand of the scenario's runs cost, in
	// USD, from each run's usage as its result on run-results reports it
	// (the batch-inference scenarios, whose model has a price; -1
	// otherwise).
	CostPer1000Runs        float64 `json:"cost_usd_per_1000_runs"`
	RedisRoundTripsPerStep float64 `json:"redis_round_trips_per_step"`
	KafkaPublishesPerStep  float64 `json:"kafka_publishes_per_step"`
	AllocBytesPerStep      float64 `json:"alloc_bytes_per_step"` // of this whole process: client, workers and broker
	// ProcessCPUmsPerStep is the CPU (user and system) this whole process
	// used a step: client, workers and an embedded broker, not separate
	// tool worker processes (-1 where the system does not say). With
	// RedisCPUmsPerStep it is what a step costs the machine, steadier
	// between runs than the rates when others share the cores.
	ProcessCPUmsPerStep float64 `json:"process_cpu_ms_per_step"`
	// CPUmsPerStepByPart is the CPU a step cost each part: "bench" (this
	// process: the broker, the bench's client and the workers it runs),
	// "stepworkers" and "toolworkers" (their processes, summed, when
	// there are any) and "redis" (its primaries, summed), where the
	// system says (Linux, a redis-server).
	CPUmsPerStepByPart   map[string]float64 `json:"cpu_ms_per_step_by_part,omitempty"`
	RedisCommandsPerStep float64            `json:"redis_commands_per_step"`
	RedisCPUmsPerStep    float64            `json:"redis_cpu_ms_per_step"` // summed over a cluster's primaries
	// RedisBusiestCPUmsPerStep is the CPU a step cost the primary that
	// worked most: the one Redis core that bounds the throughput, so
	// 1000 / it is the most steps a second the Redis can carry.
	RedisBusiestCPUmsPerStep float64 `json:"redis_busiest_primary_cpu_ms_per_step"`
	RedisPrimaries           int     `json:"redis_primaries"`             // 1 for one server, 0 when the Redis does not say
	RedisBytesPerParkedCall  float64 `json:"redis_bytes_per_parked_call"` // Redis's used_memory grown per parked call (memory scenario)
	// RedisBytesByKey is what the keys of the scenario's last run hold in
	// Redis, by kind (KeyBytes: the run's hash, its conversation, events,
	// calls, step lists), for the memory and ten-steps scenarios on a
	// redis-server (absent otherwise).
	RedisBytesByKey map[string]float64 `json:"redis_bytes_by_key,omitempty"`
	// ResumedP50ms, ResumedP99ms and AllResumedMs are, for the decisions
	// scenario, the time from a decision's publish to its run running
	// again (its run.resumed event), and until the last run was (-1 for
	// the others).
	ResumedP50ms float64 `json:"resumed_p50_ms"`
	ResumedP99ms float64 `json:"resumed_p99_ms"`
	AllResumedMs float64 `json:"all_resumed_ms"`
	// LittlesLawFraction is steps_per_s over the most a model latency
	// allows: runs in flight / latency, with RunsInFlight as the runs in
	// flight (llm-bound scenario; -1 otherwise). It equals the latency
	// over a run's mean time a step, so a bench that keeps fewer runs in
	// flight than it asked for (while they start, or as the last ones
	// end) does not pass for a pipeline that serialises them.
	LittlesLawFraction float64 `json:"littles_law_fraction"`
	// RunsInFlight is how many runs were in flight on average over the
	// measurement: each run's time from its request to its result, summed,
	// over the time the scenario took (llm-bound; -1 otherwise).
	RunsInFlight float64 `json:"runs_in_flight"`
	// MaxActiveRuns is the most runs the store held active at once
	// (sampled every 100 ms), AdmissionLimit the run_requests.max_active
	// they were admitted under, and LagEnd the run-requests lag of the
	// gateways once every run was done (run-requests scenario; -1
	// otherwise).
	MaxActiveRuns  int64 `json:"max_active_runs"`
	AdmissionLimit int   `json:"admission_limit"`
	LagEnd         int64 `json:"lag_end"`

	samples []time.Duration // the latencies p50 and p99 come from, for the charts
}

// Run runs the scenarios one after the other on one stack.
func Run(ctx context.Context, o Options) (Report, error) {
	chosen, err := choose(o.Scenarios)
	if err != nil {
		return Report{}, err
	}
	if o.ToolWorkers < 0 {
		return Report{}, fmt.Errorf("%d tool worker processes: give 0 (the tools run in the bench's process) or more", o.ToolWorkers)
	}
	if o.StepWorkers < 0 {
		return Report{}, fmt.Errorf("%d step worker processes: give 0 (the steps run in the bench's process) or more", o.StepWorkers)
	}
	if err := o.checkNoBroker(chosen); err != nil {
		return Report{}, err
	}
	batchAPI := &fakebatch.Server{Answer: fakebatch.CallsThenAnswers(2, "echo"), Delay: BatchDelay, LiveDelay: BatchDelay}
	batchSrv := httptest.NewServer(batchAPI)
	defer batchSrv.Close()
	if os.Getenv(batchKeyEnv) == "" {
		_ = os.Setenv(batchKeyEnv, "bench") // the fake takes any key; worker processes inherit it
	}
	cfgText := configFor(batchSrv.URL, slices.ContainsFunc(chosen, func(sc Scenario) bool { return sc.fake }))
	cfg, err := config.Parse([]byte(cfgText))
	if err != nil {
		return Report{}, err
	}
	rep := Report{Machine: Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		Kafka: "embedded", Redis: "embedded", At: time.Now().UTC().Format(time.RFC3339)}}
	opts := app.Options{Config: cfg, Kafka: o.Kafka, Redis: o.Redis, Logger: app.NewLogger("stepwise-bench")}
	switch {
	case o.RedisPrimaries > 0 && o.Redis != "":
		return Report{}, errors.New("give a Redis or the primaries of a private Redis Cluster, not both")
	case o.RedisPrimaries > 0:
		c, err := startRedisCluster(ctx, o.RedisPrimaries)
		if err != nil {
			return Report{}, err
		}
		defer c.close()
		o.Redis, opts.Redis = c.url, c.url
		rep.Machine.Redis = fmt.Sprintf("a private Redis Cluster of %d primaries", o.RedisPrimaries)
	case o.Redis == "":
		if srv, err := startRedisServer(ctx, false); err == nil {
			defer srv.close()
			o.Redis, opts.Redis = srv.url, srv.url
			rep.Machine.Redis = "a private redis-server"
		}
	}
	if (o.Kafka == "" && !o.NoBroker) || o.Redis == "" {
		in, err := app.StartInfra("127.0.0.1:0", o.Redis, "")
		if err != nil {
			return Report{}, err
		}
		defer in.Close()
		if o.Kafka == "" {
			opts.Kafka = in.Kafka.Addrs()[0]
		}
		opts.Redis = in.RedisURL
	}
	connect := app.Connect
	switch {
	case o.NoBroker:
		rep.Machine.Kafka, connect = "none", app.InProcess
	case o.Kafka != "":
		rep.Machine.Kafka = o.Kafka
	}
	if o.Redis != "" && rep.Machine.Redis == "embedded" {
		rep.Machine.Redis = o.Redis
	}
	s, err := newStack(ctx, connect, opts, o.StepWorkers == 0, o.ToolWorkers == 0, slices.ContainsFunc(chosen, func(sc Scenario) bool { return sc.requested }))
	if err != nil {
		return Report{}, err
	}
	defer s.close()
	s.batchAPI = batchAPI
	for _, k := range []struct {
		kind, topic string
		n           int
		command     []string
	}{
		{"stepworker", s.stack.Names.RunSteps(), o.StepWorkers, o.StepWorkerCommand},
		{"toolworker", s.stack.Names.ToolCalls(topics.DefaultQueue), o.ToolWorkers, o.ToolWorkerCommand},
	} {
		if k.n == 0 {
			continue
		}
		if len(k.command) == 0 {
			exe, err := os.Executable()
			if err != nil {
				return Report{}, fmt.Errorf("%s processes: %w", k.kind, err)
			}
			k.command = []string{exe, k.kind}
		}
		w, err := startWorkers(ctx, s.stack, k.kind, k.topic, k.command, k.n, cfgText, opts.Kafka, opts.Redis)
		if err != nil {
			return Report{}, err
		}
		defer w.close()
		s.parts = append(s.parts, part{k.kind + "s", w.cpu})
	}
	rep.Machine.StepWorkers, rep.Machine.ToolWorkers = o.StepWorkers, o.ToolWorkers
	if info, err := s.stack.Redis.Info(ctx, "server").Result(); err == nil {
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
				rep.Machine.RedisVersion = v
			}
		}
	}
	s.trace = o.Trace
	for _, sc := range chosen {
		n := o.Runs
		if n <= 0 {
			n = sc.defaultRuns
		}
		res, err := s.measure(ctx, sc, n, o.Progress)
		if err != nil {
			return rep, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		rep.Scenarios = append(rep.Scenarios, res)
	}
	if o.PlotDir != "" {
		if err := s.plot(ctx, o.PlotDir, rep.Scenarios, o.Progress); err != nil {
			return rep, fmt.Errorf("plot: %w", err)
		}
	}
	return rep, nil
}

func choose(names []string) ([]Scenario, error) {
	if len(names) == 0 || slices.Contains(names, "all") {
		return Scenarios, nil
	}
	var out []Scenario
	for _, n := range names {
		i := slices.IndexFunc(Scenarios, func(s Scenario) bool { return s.Name == n })
		if i < 0 {
			known := make([]string, len(Scenarios))
			for j, s := range Scenarios {
				known[j] = s.Name
			}
			return nil, fmt.Errorf("unknown scenario %q (known: %s, all)", n, strings.Join(known, ", "))
		}
		out = append(out, Scenarios[i])
	}
	return out, nil
}

// WriteJSON writes the report, indented.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for people, a line per scenario.
func (r Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%d cores, %s, Redis %s (%s), Kafka %s", r.Machine.Cores, r.Machine.GoVersion, orNone(r.Machine.RedisVersion), r.Machine.Redis, r.Machine.Kafka)
	if r.Machine.StepWorkers > 0 {
		fmt.Fprintf(w, ", steps in %d step worker processes", r.Machine.StepWorkers)
	}
	if r.Machine.ToolWorkers > 0 {
		fmt.Fprintf(w, ", tools in %d tool worker processes", r.Machine.ToolWorkers)
	}
	fmt.Fprintln(w)
	for _, s := range r.Scenarios {
		fmt.Fprintf(w, "%-10s %5d runs  %8.0f steps/s  %8.0f calls/s  step p50 %6.1f ms  p99 %6.1f ms  %5.1f round trips  %5.1f publishes  %6.1f commands  %7.0f B allocated a step",
			s.Scenario, s.Runs, s.StepsPerS, s.CallsPerS, s.P50ms, s.P99ms, s.RedisRoundTripsPerStep, s.KafkaPublishesPerStep, s.RedisCommandsPerStep, s.AllocBytesPerStep)
		if s.ProcessCPUmsPerStep >= 0 {
			fmt.Fprintf(w, "  CPU %.3f ms a step", s.ProcessCPUmsPerStep)
		}
		if len(s.CPUmsPerStepByPart) > 2 { // more than this process and Redis
			names := slices.Sorted(maps.Keys(s.CPUmsPerStepByPart))
			parts := make([]string, len(names))
			for i, n := range names {
				parts[i] = fmt.Sprintf("%s %.3f", n, s.CPUmsPerStepByPart[n])
			}
			fmt.Fprintf(w, " (by part, ms: %s)", strings.Join(parts, ", "))
		}
		if s.RedisBytesPerParkedCall >= 0 {
			fmt.Fprintf(w, "  %6.0f B of Redis a parked call", s.RedisBytesPerParkedCall)
		}
		if len(s.RedisBytesByKey) > 0 {
			kinds := slices.Sorted(maps.Keys(s.RedisBytesByKey))
			parts := make([]string, len(kinds))
			for i, k := range kinds {
				parts[i] = fmt.Sprintf("%s %.0f B", k, s.RedisBytesByKey[k])
			}
			fmt.Fprintf(w, "  a run's keys: %s", strings.Join(parts, ", "))
		}
		if s.RedisPrimaries > 1 {
			fmt.Fprintf(w, "  Redis CPU %.3f ms a step, %.3f on the busiest of %d primaries", s.RedisCPUmsPerStep, s.RedisBusiestCPUmsPerStep, s.RedisPrimaries)
		} else if s.RedisPrimaries == 1 {
			fmt.Fprintf(w, "  Redis CPU %.3f ms a step", s.RedisCPUmsPerStep)
		}
		if s.AllResumedMs >= 0 {
			fmt.Fprintf(w, "  resumed p50 %.1f ms p99 %.1f ms, all in %.0f ms", s.ResumedP50ms, s.ResumedP99ms, s.AllResumedMs)
		}
		if s.BatchJobs >= 0 {
			fmt.Fprintf(w, "  %d runs done through %d provider batch jobs %v", s.RunsDone, s.BatchJobs, s.BatchJobRequests)
		}
		if s.CostPer1000Runs >= 0 {
			fmt.Fprintf(w, "  %.0f runs an hour, USD %.4f per 1,000 runs", s.RunsPerHour, s.CostPer1000Runs)
		}
		if s.MaxActiveRuns >= 0 {
			fmt.Fprintf(w, "  at most %d runs active (limit %d), lag %d at the end", s.MaxActiveRuns, s.AdmissionLimit, s.LagEnd)
		}
		if s.LittlesLawFraction >= 0 {
			fmt.Fprintf(w, "  %3.0f %% of the Little's-law bound with %.0f runs in flight", 100*s.LittlesLawFraction, s.RunsInFlight)
		}
		fmt.Fprintln(w)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "miniredis"
	}
	return s
}

// run is one run of a scenario in flight.
type run struct {
	id    string
	start time.Time
}

func newRunID() string { return "bench-" + uuid.NewString() }

// request creates run id of sc's agent and model in the store and requests its first
// step, as the gateway does (without HTTP); or, for a requested scenario,
// publishes its RunRequested for the gateway to admit.
func (s *stack) request(ctx context.Context, sc Scenario, id string) (run, error) {
	r := run{id: id, start: time.Now()}
	st := s.stack.Store
	agent, model := "assistant", json.RawMessage(sc.model)
	if sc.agent != "" {
		agent, model = sc.agent, nil
	}
	if sc.requested {
		return r, topics.Publish(s.stack.Publisher, s.stack.Names.RunRequests(),
			topics.RunRequested{Header: topics.Header{RunID: r.id}, Agent: agent, Model: model, Input: json.RawMessage(`"go"`)})
	}
	if _, _, err := st.StartRun(ctx, pipeline.Run{ID: r.id, Agent: agent, Model: model, RequestHash: "bench"},
		[]pipeline.Message{{Role: pipeline.RoleUser, Content: "go"}}, r.start.Add(30*time.Second), r.start); err != nil {
		return r, err
	}
	s.mu.Lock()
	s.last = r.id
	s.mu.Unlock()
	return r, topics.Publish(s.stack.Publisher, s.stack.Names.RunSteps(), topics.StepRequested{Header: topics.Header{RunID: r.id}})
}
