package stop

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Evaluate checks the conditions against st, the state at the end of step
// st.Step, and returns nil when none fires. Otherwise it returns a
// Termination with reason stopped, the code of the first condition that
// fires in the order max_rounds, timeout, token_budget, consecutive_errors,
// stop_on_tool, content_match, loop_detection, and a human-readable detail.
// It is pure and deterministic; a nil *Conditions never fires.
func (c *Conditions) Evaluate(st State) *pipeline.Termination {
	if !c.Enabled() {
		return nil
	}
	recent := recentSteps(st, c.NeedsHistory())
	checks := []func() string{
		func() string { return c.checkMaxRounds(st) },
		func() string { return c.checkTimeout(st) },
		func() string { return c.checkTokenBudget(st) },
		func() string { return c.checkConsecutiveErrors(recent) },
		func() string { return c.checkStopOnTool(recent) },
		func() string { return c.checkContentMatch(recent) },
		func() string { return c.checkLoopDetection(recent) },
	}
	codes := []string{CodeMaxRounds, CodeTimeout, CodeTokenBudget, CodeConsecutiveErrors,
		CodeStopOnTool, CodeContentMatch, CodeLoopDetection}
	for i, check := range checks {
		if detail := check(); detail != "" {
			return &pipeline.Termination{Reason: pipeline.ReasonStopped, Code: codes[i], Detail: detail}
		}
	}
	return nil
}

// recentSteps returns the longest run of at most n records at the end of
// st.Steps that are consecutive and end with st.Step, newest first: recent[0]
// is this step, recent[k] is step st.Step-k. It is empty when the last
// record is not st.Step.
func recentSteps(st State, n int) []StepRecord {
	var out []StepRecord
	for i := len(st.Steps) - 1; i >= 0 && len(out) < n; i-- {
		if st.Steps[i].Step != st.Step-len(out) {
			break
		}
		out = append(out, st.Steps[i])
	}
	return out
}

// Each check returns the detail when its condition fires, "" otherwise.

func (c *Conditions) checkMaxRounds(st State) string {
	if c.maxRounds <= 0 || st.Step+1 < c.maxRounds {
		return ""
	}
	return fmt.Sprintf("%d of %d rounds", st.Step+1, c.maxRounds)
}

func (c *Conditions) checkTimeout(st State) string {
	if c.timeout <= 0 || st.StartedAt.IsZero() || st.Now.IsZero() {
		return ""
	}
	ran := st.Now.Sub(st.StartedAt)
	if ran < c.timeout {
		return ""
	}
	return fmt.Sprintf("ran %s, limit %s", shortDuration(shown(ran, c.timeout)), shortDuration(c.timeout))
}

func (c *Conditions) checkTokenBudget(st State) string {
	used := st.Usage.Total()
	if c.tokenBudget <= 0 || used < c.tokenBudget {
		return ""
	}
	return fmt.Sprintf("used %d of %d tokens", used, c.tokenBudget)
}

func (c *Conditions) checkConsecutiveErrors(recent []StepRecord) string {
	n := c.consecutiveErrors
	if n <= 0 || len(recent) < n {
		return ""
	}
	for _, s := range recent[:n] {
		if !hasFailedCall(s) {
			return ""
		}
	}
	return fmt.Sprintf("%d %s in a row had a failed tool call", n, plural(n, "step", "steps"))
}

func hasFailedCall(s StepRecord) bool {
	return slices.ContainsFunc(s.Calls, func(c Call) bool { return c.Status == pipeline.CallFailed })
}

func (c *Conditions) checkStopOnTool(recent []StepRecord) string {
	if len(c.stopOnTool) == 0 || len(recent) == 0 {
		return ""
	}
	for _, call := range recent[0].Calls {
		if c.stopOnTool[call.Tool] {
			return "the model called " + call.Tool
		}
	}
	return ""
}

func (c *Conditions) checkContentMatch(recent []StepRecord) string {
	if c.contentMatch == nil || len(recent) == 0 || !c.contentMatch.MatchString(recent[0].AssistantText) {
		return ""
	}
	return "the answer matched " + c.contentMatch.String()
}

func (c *Conditions) checkLoopDetection(recent []StepRecord) string {
	n := c.loopDetection
	if n <= 0 || len(recent) < n || len(recent[0].Calls) == 0 {
		return ""
	}
	want := callSet(recent[0].Calls)
	for _, s := range recent[1:n] {
		if !slices.Equal(callSet(s.Calls), want) {
			return ""
		}
	}
	calls := recent[0].Calls
	parts := make([]string, len(calls))
	for i, call := range calls {
		parts[i] = call.Tool + " " + clip(string(canonical(call.Arguments)), maxShownArgs)
	}
	return fmt.Sprintf("the same %s %s %s made in %d consecutive %s",
		plural(len(calls), "call", "calls"), strings.Join(parts, ", "),
		plural(len(calls), "was", "were"), n, plural(n, "step", "steps"))
}

// callSet is the sorted multiset of a step's (tool, canonical arguments)
// pairs, each encoded as tool NUL arguments.
func callSet(calls []Call) []string {
	set := make([]string, len(calls))
	for i, call := range calls {
		set[i] = call.Tool + "\x00" + string(canonical(call.Arguments))
	}
	slices.Sort(set)
	return set
}

// canonical is pipeline.CanonicalJSON, or the trimmed bytes when the
// arguments are not JSON, so that they still compare exactly.
func canonical(args []byte) []byte {
	if out, err := pipeline.CanonicalJSON(args); err == nil {
		return out
	}
	return bytes.TrimSpace(args)
}

// maxShownArgs bounds the arguments quoted in a loop_detection detail.
const maxShownArgs = 200

// clip cuts s to at most n bytes on a rune boundary, marking the cut with …
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// shown rounds the elapsed time down to whole seconds when the limit is in
// whole seconds (so "ran 10m2s", never "ran 10m2.123456789s"), and to
// milliseconds otherwise. Rounding down keeps it at or above the limit.
func shown(ran, limit time.Duration) time.Duration {
	if limit%time.Second == 0 {
		return ran.Truncate(time.Second)
	}
	if limit%time.Millisecond == 0 {
		return ran.Truncate(time.Millisecond)
	}
	return ran
}

// shortDuration is d.String() without trailing zero units: 10m, 1h, 1h30m,
// 10m2s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
