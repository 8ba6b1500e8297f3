package config_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

func TestDuration_reads_go_duration_strings(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
	}{
		{`"10m"`, 10 * time.Minute},
		{`"30s"`, 30 * time.Second},
		{`"1h30m"`, 90 * time.Minute},
		{`"250ms"`, 250 * time.Millisecond},
		{`"0"`, 0},
		{`"0s"`, 0},
		{`0`, 0},                    // a bare 0 needs no unit
		{`"-5s"`, -5 * time.Second}, // parsed; Validate refuses negatives where they matter
	}
	for _, c := range cases {
		var d config.Duration
		if err := json.Unmarshal([]byte(c.in), &d); err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if d.Duration != c.want {
			t.Errorf("%s = %v, want %v", c.in, d.Duration, c.want)
		}
	}
}

func TestDuration_refuses_numbers_and_other_text(t *testing.T) {
	cases := []struct{ in, want string }{
		{`30`, `want a duration string with a unit, like "30s", "10m" or "1h30m"; got number 30`},
		{`1.5`, `got number 1.5`},
		{`true`, `got boolean true`},
		{`"10 minutes"`, `want a duration like "30s", "10m" or "1h30m"; got "10 minutes"`},
		{`"30"`, `got "30"`},
		{`""`, `got ""`},
		{`{}`, `got a mapping`},
	}
	for _, c := range cases {
		var d config.Duration
		err := json.Unmarshal([]byte(c.in), &d)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.in, err, c.want)
		}
	}
}

func TestDuration_null_leaves_the_value(t *testing.T) {
	d := config.D(time.Second)
	if err := json.Unmarshal([]byte(`null`), &d); err != nil || d.Duration != time.Second {
		t.Errorf("null: %v, %v", d, err)
	}
}

func TestDuration_writes_a_string_that_reads_back(t *testing.T) {
	for _, v := range []time.Duration{0, 1500 * time.Millisecond, 90 * time.Minute} {
		b, err := json.Marshal(config.D(v))
		if err != nil {
			t.Fatal(err)
		}
		var back config.Duration
		if err := json.Unmarshal(b, &back); err != nil || back.Duration != v {
			t.Errorf("%v → %s → %v (%v)", v, b, back.Duration, err)
		}
	}
	if b, _ := json.Marshal(config.D(90 * time.Minute)); string(b) != `"1h30m0s"` {
		t.Errorf("Marshal(90m) = %s", b)
	}
}

func TestParse_durations_in_yaml(t *testing.T) {
	cfg, err := config.Parse([]byte(`
agents:
  a:
    model: {provider: script}
    stop: {timeout: 1h30m}
tools:
  t: {executor: {builtin: sleep}, timeout: "45s", approval_timeout: 10m}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Agents["a"].Stop.Timeout.Duration; got != 90*time.Minute {
		t.Errorf("stop.timeout = %v", got)
	}
	if tool := cfg.Tools["t"]; tool.Timeout.Duration != 45*time.Second || tool.ApprovalTimeout.Duration != 10*time.Minute {
		t.Errorf("tool t = %v, %v", tool.Timeout, tool.ApprovalTimeout)
	}
}
