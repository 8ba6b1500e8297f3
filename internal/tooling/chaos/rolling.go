package chaos

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Pacing of the rolling restart.
const (
	// upWithin bounds the wait for a replacement's log to say that its
	// handlers run; past it the restart goes on and says so.
	upWithin = 30 * time.Second
	// upSettle is waited after that, for the replacement to join its
	// consumer groups (a readiness probe cannot see that either).
	upSettle = time.Second
	// upPoll is how often the replacement's log is read.
	upPoll = 50 * time.Millisecond
)

// Restart is one worker the rolling restart replaced.
type Restart struct {
	Worker   string  `json:"worker"`
	Round    int     `json:"round"`
	AtS      float64 `json:"at_s"`     // when SIGTERM was sent, in seconds from the start of the churn
	ExitS    float64 `json:"exit_s"`   // from SIGTERM to the exit
	Graceful bool    `json:"graceful"` // exited within its shutdown grace + exitSlack; else killed -9
	Exit     string  `json:"exit"`     // how it exited, e.g. "exit status 0"
	UpS      float64 `json:"up_s"`     // from the replacement's start to its handlers running; -1: not seen within upWithin
}

func (r Restart) String() string {
	s := fmt.Sprintf("%s (round %d): SIGTERM %+.2fs, exited %+.2fs (%s)", r.Worker, r.Round, r.AtS, r.AtS+r.ExitS, r.Exit)
	if !r.Graceful {
		s += ", killed -9 after the grace + " + exitSlack.String()
	}
	if r.UpS >= 0 {
		s += fmt.Sprintf(", replacement up %+.2fs", r.AtS+r.ExitS+r.UpS)
	} else {
		s += ", replacement not seen up"
	}
	return s
}

// RollingFigures are the figures of a rolling restart.
type RollingFigures struct {
	Rounds      int        `json:"rounds"`
	GraceS      float64    `json:"grace_s"` // the longer of the two workers' shutdown grace
	SlackS      float64    `json:"slack_s"` // sweep interval + pauseNoise
	LimitS      float64    `json:"limit_s"` // grace + slack: a longer pause fails the experiment
	Restarts    []Restart  `json:"restarts"`
	Killed      int        `json:"killed"`           // workers that did not exit within their grace + exitSlack (a failure)
	ExitSeconds *Durations `json:"exit_s,omitempty"` // from SIGTERM to the exit
	UpSeconds   *Durations `json:"up_s,omitempty"`   // from a replacement's start to its handlers running
}

// rollingFigures sums up the restarts of one rolling restart.
func rollingFigures(rounds int, tim timings, restarts []Restart) *RollingFigures {
	f := &RollingFigures{
		Rounds: rounds, GraceS: tim.grace().Seconds(), SlackS: tim.pauseSlack().Seconds(), LimitS: tim.pauseLimit().Seconds(),
		Restarts: restarts,
	}
	var exits, ups []time.Duration
	for _, r := range restarts {
		if !r.Graceful {
			f.Killed++
		}
		exits = append(exits, seconds(r.ExitS))
		if r.UpS >= 0 {
			ups = append(ups, seconds(r.UpS))
		}
	}
	f.ExitSeconds, f.UpSeconds = durationFigures(exits), durationFigures(ups)
	return f
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// rollingCounts are what the rolling restart did.
type rollingCounts struct {
	restarts []Restart
	stops    []stopWindow
	errors   []string
}

// rollingRestart restarts every step and tool worker one after another,
// rounds times within d: round k starts at d/10 + k·(9d/10)/rounds, or as
// soon as round k−1 is over. Each worker in turn is sent SIGTERM and
// waited for, up to its shutdown grace + exitSlack (then it is killed -9:
// a finding), its replacement started and waited for until its log says
// that its handlers run, plus upSettle; then the next. It returns when the
// last round is over and d has passed, or ctx ends.
func rollingRestart(ctx context.Context, s *stack, rounds int, d time.Duration, tim timings) rollingCounts {
	var c rollingCounts
	start := time.Now()
	for round := range rounds {
		sleep(ctx, time.Until(start.Add(d/10+time.Duration(round)*(d*9/10)/time.Duration(rounds))))
		for _, p := range s.workers() {
			if ctx.Err() != nil {
				return c
			}
			restartGracefully(ctx, s, p, tim.graceOf(p.program)+exitSlack, round+1, start, &c)
		}
		s.logf("rolling: round %d of %d over", round+1, rounds)
	}
	sleep(ctx, time.Until(start.Add(d)))
	return c
}

// restartGracefully stops p with SIGTERM, waiting up to within, and starts
// its replacement; it records what happened in c.
func restartGracefully(ctx context.Context, s *stack, p *process, within time.Duration, round int, churnStart time.Time, c *rollingCounts) {
	sent := time.Now()
	s.logf("rolling: SIGTERM %s", p.name)
	ran, graceful, took := p.terminate(within)
	if !ran {
		c.errors = append(c.errors, fmt.Sprintf("rolling: %s was not running when its turn came (see crashes); not restarted", p.name))
		return
	}
	r := Restart{
		Worker: p.name, Round: round, AtS: sent.Sub(churnStart).Seconds(), ExitS: took.Seconds(),
		Graceful: graceful, Exit: p.lastExitText(), UpS: -1,
	}
	c.stops = append(c.stops, stopWindow{worker: p.name, program: p.program, from: sent, to: sent.Add(took)})
	if !graceful {
		s.logf("rolling: %s did not exit within %s of SIGTERM: killed -9 (log: %s)", p.name, within, p.logPath)
	}
	offset := fileSize(p.logPath)
	started := time.Now()
	if err := p.start(); err != nil {
		c.errors = append(c.errors, "rolling: "+err.Error())
		c.restarts = append(c.restarts, r)
		return
	}
	if waitUp(ctx, p, offset) {
		r.UpS = time.Since(started).Seconds()
	} else if ctx.Err() == nil {
		c.errors = append(c.errors, fmt.Sprintf("rolling: %s did not say its handlers run within %s of its start (log: %s); going on", p.name, upWithin, p.logPath))
	}
	s.logf("rolling: %s exited %.2fs after SIGTERM (%s), replacement up after %.2fs", p.name, took.Seconds(), r.Exit, r.UpS)
	c.restarts = append(c.restarts, r)
	sleep(ctx, upSettle)
}

// Lines of a worker's log (Watermill's router) that say it is up: the
// number of handlers it runs, then one line per handler started.
var (
	runningHandlers = regexp.MustCompile(`msg="Running router handlers".* count=(\d+)`)
	startingHandler = `msg="Starting handler"`
)

// waitUp waits up to upWithin until the log of p, from offset on, says that
// all of its handlers run. It reports false when that did not happen, p
// exited, or ctx ended.
func waitUp(ctx context.Context, p *process, offset int64) bool {
	deadline := time.Now().Add(upWithin)
	exited := p.exited()
	for {
		if handlersUp(readFrom(p.logPath, offset)) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-exited:
			return false
		case <-time.After(upPoll):
		}
	}
}

// handlersUp reports whether log says the router runs its handlers and
// every one of them has started.
func handlersUp(log string) bool {
	m := runningHandlers.FindStringSubmatch(log)
	if m == nil {
		return false
	}
	n, _ := strconv.Atoi(m[1])
	return strings.Count(log, startingHandler) >= n
}

// fileSize returns the size of the file at path, 0 when it cannot tell.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns the file at path from offset on, "" when it cannot.
func readFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
