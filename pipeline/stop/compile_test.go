package stop_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/stop"
)

func TestCompile_refuses_bad_settings_naming_the_field(t *testing.T) {
	tests := []struct {
		name string
		stop config.Stop
		want []string // each a line of the joined error
	}{
		{"negative max_rounds", config.Stop{MaxRounds: -1}, []string{"max_rounds: -1 is negative"}},
		{"negative timeout", config.Stop{Timeout: config.D(-time.Minute)}, []string{"timeout: -1m0s is negative"}},
		{"negative token_budget", config.Stop{TokenBudget: -5}, []string{"token_budget: -5 is negative"}},
		{"negative consecutive_errors", config.Stop{ConsecutiveErrors: -1}, []string{"consecutive_errors: -1 is negative"}},
		{"negative loop_detection", config.Stop{LoopDetection: -2}, []string{"loop_detection: -2 is negative"}},
		{"empty stop_on_tool name", config.Stop{StopOnTool: []string{"finish", ""}}, []string{"stop_on_tool[1]: empty tool name"}},
		{"invalid content_match", config.Stop{ContentMatch: "(unclosed"}, []string{"content_match: error parsing regexp: missing closing ): `(unclosed`"}},
		{
			"every problem at once, in field order",
			config.Stop{MaxRounds: -1, ConsecutiveErrors: -3, StopOnTool: []string{""}, ContentMatch: "a**"},
			[]string{
				"max_rounds: -1 is negative",
				"consecutive_errors: -3 is negative",
				"stop_on_tool[0]: empty tool name",
				"content_match: error parsing regexp: invalid nested repetition operator: `**`",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := stop.Compile(tt.stop)
			if err == nil {
				t.Fatalf("Compile(%+v) = %v, want an error", tt.stop, c)
			}
			if c != nil {
				t.Errorf("Compile returned conditions %v with its error", c)
			}
			if !errors.Is(err, stop.ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			var got []string
			for _, line := range strings.Split(err.Error(), "\n") {
				got = append(got, strings.TrimSuffix(line, ": "+stop.ErrInvalid.Error()))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("error:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestCompile_accepts_zero_and_valid_settings(t *testing.T) {
	tests := []config.Stop{
		{},
		{MaxRounds: 20, Timeout: config.D(10 * time.Minute), TokenBudget: 200000, ConsecutiveErrors: 3,
			StopOnTool: []string{"finish", "finish"}, ContentMatch: "(?i)all done", LoopDetection: 4},
		{ContentMatch: `^$`},
		{LoopDetection: 1},
	}
	for _, s := range tests {
		if _, err := stop.Compile(s); err != nil {
			t.Errorf("Compile(%+v): %v", s, err)
		}
	}
}

func TestConditions_Enabled_and_NeedsHistory(t *testing.T) {
	tests := []struct {
		name    string
		stop    config.Stop
		enabled bool
		history int
	}{
		{"nothing set", config.Stop{}, false, 0},
		{"empty stop_on_tool list", config.Stop{StopOnTool: []string{}}, false, 0},
		{"max_rounds reads no steps", config.Stop{MaxRounds: 5}, true, 0},
		{"timeout reads no steps", config.Stop{Timeout: config.D(time.Second)}, true, 0},
		{"token_budget reads no steps", config.Stop{TokenBudget: 10}, true, 0},
		{"stop_on_tool reads this step", config.Stop{StopOnTool: []string{"finish"}}, true, 1},
		{"content_match reads this step", config.Stop{ContentMatch: "done"}, true, 1},
		{"consecutive_errors reads n steps", config.Stop{ConsecutiveErrors: 3}, true, 3},
		{"loop_detection reads n steps", config.Stop{LoopDetection: 4}, true, 4},
		{"the largest wins", config.Stop{ConsecutiveErrors: 5, LoopDetection: 2, ContentMatch: "x"}, true, 5},
		{"everything", config.Stop{MaxRounds: 1, Timeout: config.D(1), TokenBudget: 1, ConsecutiveErrors: 2,
			StopOnTool: []string{"f"}, ContentMatch: "x", LoopDetection: 3}, true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := stop.Compile(tt.stop)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Enabled(); got != tt.enabled {
				t.Errorf("Enabled() = %v, want %v", got, tt.enabled)
			}
			if got := c.NeedsHistory(); got != tt.history {
				t.Errorf("NeedsHistory() = %d, want %d", got, tt.history)
			}
		})
	}
}

func TestConditions_nil_is_disabled(t *testing.T) {
	var c *stop.Conditions
	if c.Enabled() || c.NeedsHistory() != 0 {
		t.Errorf("nil conditions: Enabled %v, NeedsHistory %d", c.Enabled(), c.NeedsHistory())
	}
	if got := c.Evaluate(stop.State{Step: 1000}); got != nil {
		t.Errorf("nil conditions fired: %+v", got)
	}
}
