package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// maxSamples bounds the example runs the report lists per kind.
const maxSamples = 10

// Report is what one chaos run found. Failed says whether the oracle
// found a run stuck, wrong, committed or started twice, a tick doubled
// or missed, or a batch request or answer twice.
type Report struct {
	Started  time.Time `json:"started"`
	Source   string    `json:"source,omitempty"` // the commit the programs were built from, when known
	Settings Settings  `json:"settings"`

	Runs       int     `json:"runs"`       // runs asked for
	Submitted  int     `json:"submitted"`  // runs the gateway accepted
	References int     `json:"references"` // undisturbed reference runs: one per variant, with their children and forks, and one of the schedules' script
	ChurnS     float64 `json:"churn_s"`    // how long the faults lasted

	Kills             int            `json:"kills"`    // workers killed with SIGKILL
	Restarts          int            `json:"restarts"` // killed workers started again
	Crashes           int            `json:"crashes"`  // processes that exited by themselves (restarted by the harness)
	CrashedProcesses  []string       `json:"crashed_processes,omitempty"`
	RedisKills        int            `json:"redis_kills"`
	RedisRestarts     int            `json:"redis_restarts"`
	RedisDownS        float64        `json:"redis_down_s"`
	BrokerKills       int            `json:"broker_kills,omitempty"`    // Kafka brokers killed with SIGKILL (real cluster)
	BrokerRestarts    int            `json:"broker_restarts,omitempty"` // killed brokers started again on their data
	BrokerDownS       float64        `json:"broker_down_s,omitempty"`   // the longest a killed broker was down, until it answered again
	LeaderMoves       int            `json:"leader_moves,omitempty"`    // brokers restarted cleanly, their leadership moved
	Duplicates        int            `json:"duplicates"`                // records the duplicator published again
	DuplicatesByTopic map[string]int `json:"duplicates_by_topic,omitempty"`
	DuplicateFailures int            `json:"duplicate_failures,omitempty"`
	// Rolling holds the rolling restart's figures, in rolling mode only.
	Rolling *RollingFigures `json:"rolling,omitempty"`

	// Children, Forks and TickRuns count the runs judged beside the runs
	// submitted: child runs of agent tools, forks of done runs, and the
	// runs the schedules started (see the composing scenario in
	// docs/reliability.md); Done, Stuck, Wrong and DoubleCommits count
	// them too.
	Children int `json:"children"`
	Forks    int `json:"forks"`
	TickRuns int `json:"tick_runs"`
	// DoubleStarted counts the child runs, forks and runs of a schedule
	// whose run.created or run.started was logged twice, and the agent-tool
	// calls that started more than one child: a failure.
	DoubleStarted int `json:"double_started"`
	// BatchRuns counts the runs submitted in batch mode (Config.BatchShare),
	// BatchJobs the provider batches the fake Batch API was sent, and
	// BatcherKills the kills of the step worker holding the batcher while
	// one was in flight (counted in Kills too). BatchRequestsTwice counts
	// the custom_ids the fake got in more than one batch, and
	// BatchAnswersTwice the steps of batch runs that committed their
	// answer (message.assistant) more than once: either is a failure.
	BatchRuns          int `json:"batch_runs"`
	BatchJobs          int `json:"batch_jobs"`
	BatcherKills       int `json:"batcher_kills"`
	BatchRequestsTwice int `json:"batch_requests_twice"`
	BatchAnswersTwice  int `json:"batch_answers_twice"`
	// Ticks are the schedules' figures; TickProblems says what was wrong
	// (a tick doubled or missed: a failure).
	Ticks        *TickFigures `json:"ticks,omitempty"`
	TickProblems []string     `json:"tick_problems,omitempty"`

	Done          int        `json:"done"`
	Stuck         int        `json:"stuck"`           // not done when the settle time ran out
	Wrong         int        `json:"wrong"`           // done, but not as the undisturbed run of its script
	DoubleCommits int        `json:"double_commits"`  // runs with a commit event logged more than once
	RunSeconds    *Durations `json:"run_s,omitempty"` // from creation to done, of the runs done in time
	RecoveryS     float64    `json:"recovery_s"`      // from the churn's end to the last run done (0: all were done before; -1: some never were)

	// PauseSeconds are the runs' longest pauses, of the runs done in time:
	// each run's longest wait that its script does not explain (see
	// longestPause), in every mode. Paused counts the runs whose pause
	// exceeded Rolling.LimitS (rolling mode only): a failure.
	PauseSeconds *Durations     `json:"pause_s,omitempty"`
	PauseWhere   map[string]int `json:"pause_where,omitempty"` // runs paused ≥ 1 s, by the events around the pause
	Paused       int            `json:"paused"`
	// Handovers counts the claims lost while a worker of their program was
	// stopping (or killed) and claimed again; HandoverSeconds is the time
	// from that worker's exit to the new claim (negative: the new claim came
	// first).
	Handovers       int        `json:"handovers"`
	HandoverSeconds *Durations `json:"handover_s,omitempty"`

	MissingResults   int `json:"missing_results"`   // done runs without a RunResult (counted in wrong)
	MultiResultRuns  int `json:"multi_result_runs"` // runs whose RunResult was published more than once (allowed: at least once)
	DifferingResults int `json:"differing_results"` // runs with two different RunResults (counted in wrong)
	RetriedSteps     int `json:"retried_steps"`     // steps claimed more than once (lost work redone; allowed)
	ReexecutedCalls  int `json:"reexecuted_calls"`  // tool calls executed more than once (allowed: at-least-once execution)

	DeadLetters       int                     `json:"dead_letters"`
	DeadLetterReasons map[string]int          `json:"dead_letter_reasons,omitempty"`
	Terminations      map[string]int          `json:"terminations"` // done runs by termination
	StuckStates       map[string]int          `json:"stuck_states,omitempty"`
	StuckPartitions   map[string]int          `json:"stuck_partitions,omitempty"` // stuck runs by the partition of their records
	StuckRuns         []string                `json:"stuck_runs,omitempty"`
	WrongReasons      map[string]int          `json:"wrong_reasons,omitempty"`
	DoubleReasons     map[string]int          `json:"double_reasons,omitempty"`
	Backlog           map[string]TopicBacklog `json:"backlog,omitempty"` // by topic, when the settle time ended
	Samples           []Sample                `json:"samples,omitempty"`
	HarnessErrors     []string                `json:"harness_errors,omitempty"`
	Aborted           string                  `json:"aborted,omitempty"` // why the experiment stopped early: the figures are partial
	WorkDir           string                  `json:"work_dir,omitempty"`
}

// Durations are a distribution's figures, in seconds.
type Durations struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Settings are the knobs a report was made with.
type Settings struct {
	Runs        int     `json:"runs"`
	ChurnS      float64 `json:"churn_s"`
	Seed        uint64  `json:"seed"`
	Variants    int     `json:"variants"`
	Steps       int     `json:"steps"`
	Rolling     bool    `json:"rolling"`
	Kafka       string  `json:"kafka"`
	BrokerKillS float64 `json:"broker_kill_every_s,omitempty"`
	Rounds      int     `json:"rounds,omitempty"`
	KillEveryS  float64 `json:"kill_every_s"`
	RedisKill   bool    `json:"redis_kill"`
	Duplicate   float64 `json:"duplicate"`
	SettleS     float64 `json:"settle_s"`
	StepWorkers int     `json:"stepworkers"`
	ToolWorkers int     `json:"toolworkers"`
	WorkerYAML  string  `json:"worker_yaml"`
}

// Sample is one run the oracle found at fault.
type Sample struct {
	RunID   string      `json:"run_id"`
	Kind    string      `json:"kind"` // stuck, wrong, double_commit, double_started, paused, longest_pause
	Details []string    `json:"details"`
	State   *stuckState `json:"state,omitempty"`
}

// Failed reports whether any run was stuck, wrong, committed or started
// twice, or a schedule's tick doubled or missed, or a batch request sent
// or answer committed twice, or,
// in rolling mode, paused longer than the limit, or a worker had to be
// killed because it did not exit after SIGTERM.
func (r *Report) Failed() bool {
	return r.Stuck > 0 || r.Wrong > 0 || r.DoubleCommits > 0 || r.Submitted < r.Runs ||
		r.DoubleStarted > 0 || len(r.TickProblems) > 0 || r.BatchRequestsTwice > 0 || r.BatchAnswersTwice > 0 ||
		r.Paused > 0 || (r.Rolling != nil && r.Rolling.Killed > 0)
}

func settingsOf(c *Config) Settings {
	s := Settings{
		Runs: c.Runs, Seed: c.Seed, Variants: c.Variants, Steps: c.Steps,
		RedisKill: c.killsRedis(), StepWorkers: c.StepWorkers, ToolWorkers: c.ToolWorkers, Rolling: c.Rolling,
		SettleS: c.Settle.Seconds(), WorkerYAML: c.WorkerYAML, Kafka: c.Kafka,
	}
	if c.killsBrokers() {
		s.BrokerKillS = c.BrokerKillEvery.Seconds()
	}
	if c.Rolling {
		s.Rounds = c.Rounds
	}
	if c.churning() {
		s.ChurnS = c.Churn.Seconds()
		s.KillEveryS = max(0, c.KillEvery.Seconds())
		s.Duplicate = max(0, c.Duplicate)
	}
	return s
}

func (r *Report) addSample(s Sample) {
	n := 0
	for _, x := range r.Samples {
		if x.Kind == s.Kind {
			n++
		}
	}
	if n < maxSamples {
		r.Samples = append(r.Samples, s)
	}
}

// WriteTable writes the figures as a table, then the histograms and the
// samples.
func (r *Report) WriteTable(w io.Writer) {
	verdict := "PASS"
	switch {
	case r.Aborted != "":
		verdict = "ABORTED (partial figures): " + r.Aborted
	case r.Failed():
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "\nstepwise chaos — %s — %s\n", verdict, r.Started.UTC().Format(time.RFC3339))
	if r.Source != "" {
		fmt.Fprintf(w, "programs built from %s\n", r.Source)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v any, note string) { fmt.Fprintf(tw, "  %s\t%v\t%s\n", k, v, note) }
	row("runs", r.Runs, fmt.Sprintf("%d submitted; %d reference runs (each script, its children and fork, undisturbed first)", r.Submitted, r.References))
	faults := "none: an undisturbed baseline"
	if r.Settings.ChurnS > 0 {
		var f []string
		if r.Settings.Rolling {
			f = append(f, fmt.Sprintf("%d rounds of restarting every worker (SIGTERM, replacement)", r.Settings.Rounds))
		}
		if r.Settings.KillEveryS > 0 {
			f = append(f, fmt.Sprintf("a worker killed every ~%.1fs", r.Settings.KillEveryS))
		}
		if r.Settings.RedisKill {
			f = append(f, "redis-server killed once")
		}
		if r.Settings.BrokerKillS > 0 {
			f = append(f, fmt.Sprintf("a broker killed every ~%.0fs and one restarted cleanly", r.Settings.BrokerKillS))
		}
		if r.Settings.Duplicate > 0 {
			f = append(f, fmt.Sprintf("%.0f%% of the records duplicated", 100*r.Settings.Duplicate))
		}
		faults = strings.Join(f, ", ")
	}
	row("churn", fmt.Sprintf("%.1fs", r.ChurnS), faults)
	if g := r.Rolling; g != nil {
		row("graceful restarts", len(g.Restarts), fmt.Sprintf("%d killed -9 after not exiting within grace + %s", g.Killed, exitSlack))
		if d := g.ExitSeconds; d != nil {
			row("exit after SIGTERM", fmt.Sprintf("p50 %.2fs, max %.2fs", d.P50, d.Max), fmt.Sprintf("shutdown grace %.1fs", g.GraceS))
		}
		if d := g.UpSeconds; d != nil {
			row("replacement up", fmt.Sprintf("p50 %.2fs, max %.2fs", d.P50, d.Max), "from its start to its handlers running")
		}
	} else {
		row("kills", r.Kills, "step and tool workers, kill -9")
		row("restarts", r.Restarts, "of killed workers")
	}
	row("crashes", r.Crashes, "processes that exited by themselves, restarted")
	row("redis kills", r.RedisKills, fmt.Sprintf("restarts from AOF %d, down %.2fs", r.RedisRestarts, r.RedisDownS))
	if r.Settings.Kafka == KafkaReal {
		row("broker kills", r.BrokerKills, fmt.Sprintf("Apache Kafka, %d nodes: restarts %d, longest down %.1fs; %d clean restarts (leadership moved)",
			clusterNodes, r.BrokerRestarts, r.BrokerDownS, r.LeaderMoves))
	}
	row("duplicates", r.Duplicates, "records published again by the duplicator")
	if r.Children+r.Forks+r.TickRuns > 0 {
		row("composed", fmt.Sprintf("%d children, %d forks, %d tick runs", r.Children, r.Forks, r.TickRuns), "judged beside the runs submitted, like them")
	}
	if r.BatchRuns > 0 {
		row("batch runs", r.BatchRuns, fmt.Sprintf("in batch mode on the fake Batch API: %d provider batches, %d kills of the batcher's holder with one in flight", r.BatchJobs, r.BatcherKills))
		row("batch twice", fmt.Sprintf("%d requests, %d answers", r.BatchRequestsTwice, r.BatchAnswersTwice), "custom_ids sent in two batches, answers committed twice")
	}
	if t := r.Ticks; t != nil {
		row("ticks", fmt.Sprintf("%d expected, %d fired", t.Expected, t.Fired), fmt.Sprintf("%d doubled, %d missed; %d skipped by the skip schedule (allowed)", t.Doubled, t.Missed, t.Skipped))
	}
	row("done", r.Done, "")
	row("stuck", r.Stuck, "not done when the settle time ran out")
	row("wrong", r.Wrong, "done, but not as the undisturbed run of the script (or no/differing RunResult)")
	row("double commits", r.DoubleCommits, "runs with a commit event logged more than once")
	row("double started", r.DoubleStarted, "child runs, forks and tick runs started twice, calls that started two children")
	recovery := fmt.Sprintf("%.1fs", r.RecoveryS)
	if r.RecoveryS < 0 {
		recovery = "never"
	}
	row("recovery", recovery, fmt.Sprintf("from the end of the churn to the last run done (settle limit %.0fs)", r.Settings.SettleS))
	if d := r.RunSeconds; d != nil {
		row("run time", fmt.Sprintf("p50 %.1fs, p99 %.1fs, max %.1fs", d.P50, d.P99, d.Max), "from creation to done")
	}
	if d := r.PauseSeconds; d != nil {
		note := "each run's longest wait its script does not explain"
		if g := r.Rolling; g != nil {
			note = fmt.Sprintf("limit %.1fs = grace %.1fs + slack %.1fs (sweep interval + %s)", g.LimitS, g.GraceS, g.SlackS, pauseNoise)
		}
		row("pause", fmt.Sprintf("p50 %.2fs, p99 %.2fs, max %.2fs", d.P50, d.P99, d.Max), note)
	}
	if r.Rolling != nil {
		row("paused too long", r.Paused, "runs paused longer than the limit")
	}
	if d := r.HandoverSeconds; d != nil {
		row("handovers", fmt.Sprintf("%d: p50 %.2fs, max %.2fs", r.Handovers, d.P50, d.Max), "claims lost with a stopped worker, from its exit to the next claim")
	}
	row("run results", fmt.Sprintf("%d missing, %d differing", r.MissingResults, r.DifferingResults), fmt.Sprintf("%d runs published more than once (allowed)", r.MultiResultRuns))
	row("redone work", fmt.Sprintf("%d steps, %d calls", r.RetriedSteps, r.ReexecutedCalls), "claimed or executed more than once (allowed)")
	row("dead letters", r.DeadLetters, "")
	tw.Flush()
	hist := func(title string, m map[string]int) {
		if len(m) == 0 {
			return
		}
		fmt.Fprintf(w, "%s:\n", title)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if m[keys[i]] != m[keys[j]] {
				return m[keys[i]] > m[keys[j]]
			}
			return keys[i] < keys[j]
		})
		for _, k := range keys {
			fmt.Fprintf(w, "  %6d  %s\n", m[k], k)
		}
	}
	hist("terminations", r.Terminations)
	hist("stuck runs by state", r.StuckStates)
	hist("stuck runs by partition", r.StuckPartitions)
	hist("wrong runs by reason", r.WrongReasons)
	hist("double commits by event", r.DoubleReasons)
	hist("dead letters by reason", r.DeadLetterReasons)
	hist("duplicates by topic", r.DuplicatesByTopic)
	hist("runs paused ≥ 1s, by where", r.PauseWhere)
	if r.Rolling != nil && len(r.Rolling.Restarts) > 0 {
		fmt.Fprintln(w, "restarts (seconds from the start of the churn):")
		for _, x := range r.Rolling.Restarts {
			fmt.Fprintf(w, "  %s\n", x)
		}
	}
	if len(r.Backlog) > 0 {
		fmt.Fprintln(w, "topics when the settle time ended (records; not consumed by group, by partition):")
		topics := make([]string, 0, len(r.Backlog))
		for t := range r.Backlog {
			topics = append(topics, t)
		}
		sort.Strings(topics)
		for _, t := range topics {
			b := r.Backlog[t]
			line := fmt.Sprintf("  %8d  %s", b.Records, t)
			groups := make([]string, 0, len(b.Lag))
			for g := range b.Lag {
				groups = append(groups, g)
			}
			sort.Strings(groups)
			for _, g := range groups {
				line += fmt.Sprintf("; %s lags %d [%s]", g, b.Lag[g], strings.Join(b.LagByPartition[g], " "))
			}
			fmt.Fprintln(w, line)
		}
	}
	if len(r.CrashedProcesses) > 0 {
		fmt.Fprintf(w, "processes that exited by themselves:\n  %s\n", strings.Join(r.CrashedProcesses, "\n  "))
	}
	if len(r.Samples) > 0 {
		fmt.Fprintln(w, "samples:")
		for _, s := range r.Samples {
			fmt.Fprintf(w, "  %s %s\n", s.Kind, s.RunID)
			if s.State != nil {
				fmt.Fprintf(w, "      %s\n", s.State)
			}
			for _, d := range s.Details {
				fmt.Fprintf(w, "      %s\n", d)
			}
		}
	}
	for _, p := range r.TickProblems {
		fmt.Fprintf(w, "ticks: %s\n", p)
	}
	for _, e := range r.HarnessErrors {
		fmt.Fprintf(w, "harness: %s\n", e)
	}
	if r.WorkDir != "" {
		fmt.Fprintf(w, "logs, configuration and AOF: %s\n", r.WorkDir)
	}
}

// WriteJSON writes the report as indented JSON to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}
