package chaos

import (
	"fmt"
	"time"

	"sigs.k8s.io/yaml"
)

// The programs' defaults for the settings the harness reads from the
// worker configuration, when it leaves them out.
const (
	defaultShutdownGrace = 20 * time.Second
	defaultSweepInterval = 2 * time.Second
)

// Slack of the pause limit and of the wait for a stopping worker.
const (
	// pauseNoise is added to the shutdown grace and one sweep interval in
	// the pause limit: starting a process, joining a consumer group and
	// the scheduling of eight processes and the harness on two cores.
	pauseNoise = 2 * time.Second
	// exitSlack is how long past its shutdown grace a worker sent SIGTERM
	// may take to exit before it is a finding (and is killed).
	exitSlack = 10 * time.Second
)

// timings are the settings of the worker configuration the harness judges
// a rolling restart by. The harness parses them from the configuration it
// gives the programs, so a WorkerYAML of one's own is judged by its own
// values.
type timings struct {
	stepGrace time.Duration // stepworker.shutdown_grace
	toolGrace time.Duration // toolworker.shutdown_grace
	sweep     time.Duration // stepworker.sweep_interval
}

// parseTimings reads the timings from workerYAML, with the programs'
// defaults for what it leaves out.
func parseTimings(workerYAML string) (timings, error) {
	var y struct {
		StepWorker struct {
			ShutdownGrace string `json:"shutdown_grace"`
			SweepInterval string `json:"sweep_interval"`
		} `json:"stepworker"`
		ToolWorker struct {
			ShutdownGrace string `json:"shutdown_grace"`
		} `json:"toolworker"`
	}
	if err := yaml.Unmarshal([]byte(workerYAML), &y); err != nil {
		return timings{}, fmt.Errorf("worker yaml: %w", err)
	}
	t := timings{stepGrace: defaultShutdownGrace, toolGrace: defaultShutdownGrace, sweep: defaultSweepInterval}
	for _, f := range []struct {
		key, value string
		into       *time.Duration
	}{
		{"stepworker.shutdown_grace", y.StepWorker.ShutdownGrace, &t.stepGrace},
		{"toolworker.shutdown_grace", y.ToolWorker.ShutdownGrace, &t.toolGrace},
		{"stepworker.sweep_interval", y.StepWorker.SweepInterval, &t.sweep},
	} {
		if f.value == "" {
			continue
		}
		d, err := time.ParseDuration(f.value)
		if err != nil || d < 0 {
			return timings{}, fmt.Errorf("worker yaml: %s: %q is not a duration ≥ 0", f.key, f.value)
		}
		*f.into = d
	}
	return t, nil
}

// grace is the longer of the two workers' shutdown grace.
func (t timings) grace() time.Duration { return max(t.stepGrace, t.toolGrace) }

// graceOf is the shutdown grace of a worker program ("stepworker" or
// "toolworker").
func (t timings) graceOf(program string) time.Duration {
	if program == programStepWorker {
		return t.stepGrace
	}
	return t.toolGrace
}

// pauseSlack is what the pause limit allows beyond the grace: one sweep
// interval (an abandoned claim is taken over by the next sweep) and
// pauseNoise.
func (t timings) pauseSlack() time.Duration { return t.sweep + pauseNoise }

// pauseLimit is the longest pause a rolling restart may cause a run: the
// grace, which the claim promises, plus pauseSlack.
func (t timings) pauseLimit() time.Duration { return t.grace() + t.pauseSlack() }
