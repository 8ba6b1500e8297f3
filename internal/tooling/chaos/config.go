package chaos

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Environment variables read by [ConfigFromEnv], one per knob of [Config].
const (
	EnvRuns        = "STEPWISE_CHAOS_RUNS"         // Config.Runs, e.g. 200
	EnvChurn       = "STEPWISE_CHAOS_CHURN"        // Config.Churn, e.g. 30s; 0 for an undisturbed baseline
	EnvSeed        = "STEPWISE_CHAOS_SEED"         // Config.Seed
	EnvKillEvery   = "STEPWISE_CHAOS_KILL_EVERY"   // Config.KillEvery; 0 kills no worker
	EnvRedisKill   = "STEPWISE_CHAOS_REDIS_KILL"   // Config.RedisKill: true or false
	EnvDuplicate   = "STEPWISE_CHAOS_DUPLICATE"    // Config.Duplicate, a fraction; 0 duplicates nothing
	EnvSettle      = "STEPWISE_CHAOS_SETTLE"       // Config.Settle, e.g. 120s
	EnvStepWorkers = "STEPWISE_CHAOS_STEPWORKERS"  // Config.StepWorkers
	EnvToolWorkers = "STEPWISE_CHAOS_TOOLWORKERS"  // Config.ToolWorkers
	EnvBin         = "STEPWISE_CHAOS_BIN"          // Config.BinDir
	EnvSrc         = "STEPWISE_CHAOS_SRC"          // Config.SrcDir
	EnvWorkDir     = "STEPWISE_CHAOS_DIR"          // Config.WorkDir
	EnvJSON        = "STEPWISE_CHAOS_JSON"         // Config.JSONPath
	EnvWorkerYAML  = "STEPWISE_CHAOS_WORKER_YAML"  // Config.WorkerYAML
	EnvVariants    = "STEPWISE_CHAOS_VARIANTS"     // Config.Variants
	EnvSteps       = "STEPWISE_CHAOS_STEPS"        // Config.Steps
	EnvKeepWorkDir = "STEPWISE_CHAOS_KEEP_WORKDIR" // Config.KeepWorkDir: true or false
	EnvRolling     = "STEPWISE_CHAOS_ROLLING"      // Config.Rolling: true or false
	EnvRounds      = "STEPWISE_CHAOS_ROUNDS"       // Config.Rounds, rounds of the rolling restart
	EnvKafka       = "STEPWISE_CHAOS_KAFKA"        // Config.Kafka: embedded or real
	EnvBrokerKill  = "STEPWISE_CHAOS_BROKER_KILL"  // Config.BrokerKillEvery; 0 kills no broker
	EnvBatch       = "STEPWISE_CHAOS_BATCH"        // Config.BatchShare, a fraction; 0 runs none in batch mode
)

// The brokers a chaos run can run on ([Config.Kafka]).
const (
	KafkaEmbedded = "embedded" // `stepwise infra`'s kfake broker, one process
	KafkaReal     = "real"     // an Apache Kafka cluster of three nodes (internal/tooling/kafkacluster)
)

// DefaultWorkerYAML is the worker part of the configuration the programs
// run with: short leases, a fast sweeper and a short dispatch timeout, so
// that work a killed worker held is re-driven within seconds, and a retry
// budget (max_attempts) far above what the churn can spend, so a run that
// ends with reason error is a finding, not the budget doing its job.
const DefaultWorkerYAML = `kafka: {partitions: 8}
stepworker: {lease: 2s, sweep_interval: 200ms, dispatch_timeout: 3s, max_attempts: 50}
toolworker: {lease: 2s, default_timeout: 30s}
`

// RollingWorkerYAML is DefaultWorkerYAML with a shutdown grace of 3 s for
// both workers instead of the programs' 20 s, so that a rolling restart
// ([Config.Rolling]) takes seconds per worker and the scripts' long work
// (up to 1.7 × the grace) both outlasts it and fits in it.
const RollingWorkerYAML = `kafka: {partitions: 8}
stepworker: {lease: 2s, sweep_interval: 200ms, dispatch_timeout: 3s, max_attempts: 50, shutdown_grace: 3s}
toolworker: {lease: 2s, default_timeout: 30s, shutdown_grace: 3s}
`

// Config is what one chaos run does. The zero value of a field means its
// default (see [Config.setDefaults]); Churn, KillEvery and Duplicate take
// explicit zeros through [ConfigFromEnv] ("0" switches the fault off).
//
// Two experiments share it: the kill -9 churn (the default), and, with
// Rolling, the rolling restart, in which the zero values of KillEvery,
// Duplicate and RedisKill mean off.
type Config struct {
	Runs     int           // runs submitted; default 1000
	Churn    time.Duration // how long faults are injected; default 60s. Negative: no churn at all
	Seed     uint64        // seeds the scripts and the faults; default 1
	Variants int           // distinct scripts, each run undisturbed once as the reference; default 16
	Steps    int           // tool-calling steps per script, before the final answer; default 3

	// KillEvery is the mean time between two worker kills (jittered ±50%);
	// default 2s; negative: no worker is killed.
	KillEvery time.Duration
	// RedisKill, when set, says whether redis-server is killed -9 once
	// during the churn and restarted from its append-only file. Nil: yes,
	// except in rolling mode.
	RedisKill *bool
	// Duplicate is the fraction of the records of every topic that the
	// duplicator publishes once more, up to 3 s later; default 0.2;
	// negative: no duplicates.
	Duplicate float64
	// BatchShare is the fraction of the runs submitted whose agent's
	// model is in batch mode on a fake OpenAI Batch API the harness
	// serves (see batchAPI); the churn also kills the step worker that
	// holds the batcher while a provider batch is in flight, about every
	// three KillEvery. Default 0.2 in the kill churn; negative (and the
	// default in rolling mode): none.
	BatchShare float64
	// Settle is how long, after the churn ends, every run has to end before
	// the ones still open count as stuck; default 120s.
	Settle time.Duration

	// Rolling replaces the kill -9 churn with rolling restarts: during the
	// churn, Rounds times, every step and tool worker in turn is stopped
	// with SIGTERM, waited for, and replaced (see rollingRestart), and every
	// run fails that paused longer than the workers' shutdown grace plus a
	// slack ([pauseLimit]). Kills are refused with it; the Redis kill and
	// the duplicator are off unless asked for. WorkerYAML defaults to
	// RollingWorkerYAML.
	Rolling bool
	// Rounds is how many times the rolling restart goes over every worker;
	// default 2.
	Rounds int

	// Kafka is the broker: KafkaEmbedded (default) or KafkaReal. On a real
	// cluster the churn also kills brokers (BrokerKillEvery) and restarts
	// one cleanly, which moves its partitions' leadership.
	Kafka string
	// BrokerKillEvery is the mean time between two broker kills -9 on a
	// real cluster (jittered ±50%; one broker down at a time, back after
	// brokerDownMin–brokerDownMax); default 15s; negative: none.
	BrokerKillEvery time.Duration

	StepWorkers int // stepworker processes; default 2
	ToolWorkers int // toolworker processes; default 2

	// BinDir holds prebuilt stepwise, gateway, stepworker and toolworker
	// programs. Empty: they are built from SrcDir into the work directory.
	BinDir string
	// SrcDir is the module root the programs are built from; default the
	// module root above the current directory.
	SrcDir string
	// WorkDir receives the configuration, the logs of every process and the
	// AOF of redis-server. Empty: a new temporary directory, removed after
	// a clean run unless KeepWorkDir.
	WorkDir     string
	KeepWorkDir bool
	// JSONPath, when set, receives the report as JSON.
	JSONPath string
	// WorkerYAML replaces DefaultWorkerYAML, or RollingWorkerYAML in
	// rolling mode (the kafka, stepworker and toolworker sections of the
	// programs' configuration). The harness reads the shutdown grace and
	// sweep interval it judges pauses by from it.
	WorkerYAML string

	// Logf receives progress lines; default: discarded.
	Logf func(format string, args ...any)
}

func (c *Config) setDefaults() {
	if c.Runs == 0 {
		c.Runs = 1000
	}
	if c.Churn == 0 {
		c.Churn = 60 * time.Second
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Variants == 0 {
		c.Variants = 16
	}
	if c.Steps == 0 {
		c.Steps = 3
	}
	switch {
	case c.KillEvery == 0 && c.Rolling:
		c.KillEvery = -1
	case c.KillEvery == 0:
		c.KillEvery = 2 * time.Second
	}
	switch {
	case c.Duplicate == 0 && c.Rolling:
		c.Duplicate = -1
	case c.Duplicate == 0:
		c.Duplicate = 0.2
	}
	switch {
	case c.BatchShare == 0 && c.Rolling:
		c.BatchShare = -1
	case c.BatchShare == 0:
		c.BatchShare = 0.2
	}
	if c.RedisKill == nil {
		kill := !c.Rolling
		c.RedisKill = &kill
	}
	if c.Rounds == 0 {
		c.Rounds = 2
	}
	if c.Kafka == "" {
		c.Kafka = KafkaEmbedded
	}
	if c.BrokerKillEvery == 0 {
		c.BrokerKillEvery = 15 * time.Second
	}
	if c.Settle == 0 {
		c.Settle = 120 * time.Second
	}
	if c.StepWorkers == 0 {
		c.StepWorkers = 2
	}
	if c.ToolWorkers == 0 {
		c.ToolWorkers = 2
	}
	if c.WorkerYAML == "" {
		c.WorkerYAML = DefaultWorkerYAML
		if c.Rolling {
			c.WorkerYAML = RollingWorkerYAML
		}
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Runs < 1 {
		errs = append(errs, fmt.Errorf("runs: %d, want ≥ 1", c.Runs))
	}
	if c.Variants < 1 {
		errs = append(errs, fmt.Errorf("variants: %d, want ≥ 1", c.Variants))
	}
	if c.Steps < 1 || c.Steps > 20 {
		errs = append(errs, fmt.Errorf("steps: %d, want 1 to 20", c.Steps))
	}
	if c.Duplicate > 1 {
		errs = append(errs, fmt.Errorf("duplicate: %g, want a fraction ≤ 1", c.Duplicate))
	}
	if c.BatchShare > 1 {
		errs = append(errs, fmt.Errorf("batch: %g, want a fraction ≤ 1", c.BatchShare))
	}
	if c.Settle < 0 {
		errs = append(errs, fmt.Errorf("settle: %s is negative", c.Settle))
	}
	if c.StepWorkers < 1 || c.ToolWorkers < 1 {
		errs = append(errs, fmt.Errorf("workers: %d step and %d tool, want ≥ 1 of each", c.StepWorkers, c.ToolWorkers))
	}
	if c.Rolling && !c.churning() {
		errs = append(errs, errors.New("rolling: the rolling restart needs a churn period"))
	}
	if c.Rolling && c.KillEvery > 0 {
		errs = append(errs, fmt.Errorf("rolling: kill every %s as well; the rolling restart and the kill -9 churn are separate experiments", c.KillEvery))
	}
	if c.Rounds < 1 {
		errs = append(errs, fmt.Errorf("rounds: %d, want ≥ 1", c.Rounds))
	}
	if c.Kafka != KafkaEmbedded && c.Kafka != KafkaReal {
		errs = append(errs, fmt.Errorf("kafka: %q, want %s or %s", c.Kafka, KafkaEmbedded, KafkaReal))
	}
	if _, err := parseTimings(c.WorkerYAML); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// churning reports whether faults are injected at all.
func (c *Config) churning() bool { return c.Churn > 0 }

// composes reports whether runs compose (children, a handoff, forks):
// in the kill churn, not in the rolling restart, whose pause limit a
// parent waiting for its children would not meet.
func (c *Config) composes() bool { return !c.Rolling }

// schedules reports whether schedules fire during the churn (see
// tickSchedule): in the kill churn only, as composes.
func (c *Config) schedules() bool { return c.churning() && c.composes() }

// killsBrokers reports whether the churn kills and restarts brokers.
func (c *Config) killsBrokers() bool {
	return c.churning() && c.Kafka == KafkaReal && c.BrokerKillEvery > 0
}

// batches reports whether a share of the runs is in batch mode.
func (c *Config) batches() bool { return c.BatchShare > 0 }

// killsRedis reports whether the churn kills redis-server once.
func (c *Config) killsRedis() bool { return c.churning() && c.RedisKill != nil && *c.RedisKill }

// ConfigFromEnv returns a Config with the knobs the STEPWISE_CHAOS_*
// variables set, and every problem in them at once. A "0" for the churn,
// the kill interval, the duplicate fraction or the batch share switches
// that fault or share off.
func ConfigFromEnv() (Config, error) {
	var c Config
	var errs []error
	intVar := func(name string, into *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: want an integer", name, v))
			}
			*into = n
		}
	}
	durVar := func(name string, into *time.Duration, zeroIsOff bool) {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: want a duration such as 30s", name, v))
			}
			if d == 0 && zeroIsOff {
				d = -1 // off, not the default
			}
			*into = d
		}
	}
	boolVar := func(name string, into *bool) {
		if v := os.Getenv(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: want true or false", name, v))
			}
			*into = b
		}
	}
	intVar(EnvRuns, &c.Runs)
	durVar(EnvChurn, &c.Churn, true)
	if v := os.Getenv(EnvSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want an unsigned integer", EnvSeed, v))
		}
		c.Seed = n
	}
	durVar(EnvKillEvery, &c.KillEvery, true)
	if os.Getenv(EnvRedisKill) != "" {
		var kill bool
		boolVar(EnvRedisKill, &kill)
		c.RedisKill = &kill
	}
	fracVar := func(name string, into *float64) {
		if v := os.Getenv(name); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: want a fraction such as 0.2", name, v))
			}
			if f == 0 {
				f = -1 // off, not the default
			}
			*into = f
		}
	}
	fracVar(EnvDuplicate, &c.Duplicate)
	fracVar(EnvBatch, &c.BatchShare)
	durVar(EnvSettle, &c.Settle, false)
	intVar(EnvStepWorkers, &c.StepWorkers)
	intVar(EnvToolWorkers, &c.ToolWorkers)
	intVar(EnvVariants, &c.Variants)
	intVar(EnvSteps, &c.Steps)
	c.BinDir = os.Getenv(EnvBin)
	c.SrcDir = os.Getenv(EnvSrc)
	c.WorkDir = os.Getenv(EnvWorkDir)
	c.JSONPath = os.Getenv(EnvJSON)
	c.WorkerYAML = os.Getenv(EnvWorkerYAML)
	boolVar(EnvKeepWorkDir, &c.KeepWorkDir)
	boolVar(EnvRolling, &c.Rolling)
	intVar(EnvRounds, &c.Rounds)
	c.Kafka = os.Getenv(EnvKafka)
	durVar(EnvBrokerKill, &c.BrokerKillEvery, true)
	return c, errors.Join(errs...)
}
