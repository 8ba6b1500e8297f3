package stop

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

// The codes a stopped run's Termination carries, one per condition, in the
// order of precedence Evaluate applies.
const (
	CodeMaxRounds         = "max_rounds"
	CodeTimeout           = "timeout"
	CodeTokenBudget       = "token_budget"
	CodeConsecutiveErrors = "consecutive_errors"
	CodeStopOnTool        = "stop_on_tool"
	CodeContentMatch      = "content_match"
	CodeLoopDetection     = "loop_detection"
)

// Conditions are an agent's stop conditions, compiled from config.Stop by
// Compile. A Conditions is immutable and safe for concurrent use; a nil
// *Conditions has every condition disabled.
type Conditions struct {
	maxRounds         int
	timeout           time.Duration
	tokenBudget       int64
	consecutiveErrors int
	stopOnTool        map[string]bool
	contentMatch      *regexp.Regexp
	loopDetection     int
}

// Compile checks s and compiles it: the content_match regular expression is
// compiled once here. Zero and empty settings disable their condition. It
// returns every problem at once, joined; each names its field and matches
// ErrInvalid. config.Validate already refuses the same mistakes, so a
// validated configuration always compiles.
func Compile(s config.Stop) (*Conditions, error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s: %w", field, fmt.Sprintf(format, args...), ErrInvalid))
	}
	if s.MaxRounds < 0 {
		bad("max_rounds", "%d is negative", s.MaxRounds)
	}
	if s.Timeout.Duration < 0 {
		bad("timeout", "%s is negative", s.Timeout.Duration)
	}
	if s.TokenBudget < 0 {
		bad("token_budget", "%d is negative", s.TokenBudget)
	}
	if s.ConsecutiveErrors < 0 {
		bad("consecutive_errors", "%d is negative", s.ConsecutiveErrors)
	}
	if s.LoopDetection < 0 {
		bad("loop_detection", "%d is negative", s.LoopDetection)
	}
	c := &Conditions{
		maxRounds:         s.MaxRounds,
		timeout:           s.Timeout.Duration,
		tokenBudget:       s.TokenBudget,
		consecutiveErrors: s.ConsecutiveErrors,
		loopDetection:     s.LoopDetection,
	}
	for i, name := range s.StopOnTool {
		if name == "" {
			bad(fmt.Sprintf("stop_on_tool[%d]", i), "empty tool name")
			continue
		}
		if c.stopOnTool == nil {
			c.stopOnTool = make(map[string]bool, len(s.StopOnTool))
		}
		c.stopOnTool[name] = true
	}
	if s.ContentMatch != "" {
		re, err := regexp.Compile(s.ContentMatch)
		if err != nil {
			bad("content_match", "%v", err)
		}
		c.contentMatch = re
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// Enabled reports whether any condition is set. When it is false, Evaluate
// always returns nil and the step worker need not build a State.
func (c *Conditions) Enabled() bool {
	return c != nil && (c.maxRounds > 0 || c.timeout > 0 || c.tokenBudget > 0 ||
		c.consecutiveErrors > 0 || len(c.stopOnTool) > 0 || c.contentMatch != nil || c.loopDetection > 0)
}

// NeedsHistory is how many of the most recent ended steps, this one
// included, Evaluate reads from State.Steps: the largest of
// consecutive_errors and loop_detection, at least 1 when stop_on_tool or
// content_match is set, and 0 when no condition reads steps. The step worker
// loads only that many (see History).
func (c *Conditions) NeedsHistory() int {
	if c == nil {
		return 0
	}
	n := max(c.consecutiveErrors, c.loopDetection)
	if len(c.stopOnTool) > 0 || c.contentMatch != nil {
		n = max(n, 1)
	}
	return n
}
