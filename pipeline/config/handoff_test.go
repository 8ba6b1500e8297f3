package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

// handoffAgents is a configuration of three agents around triage, whose
// further fields (", handoffs: [...]") and runs settings each case sets.
func handoffAgents(triage, runs string) string {
	return `
runs: {` + runs + `}
agents:
  triage: {model: {provider: script}` + triage + `}
  refunds:
    model: {provider: script}
    description: Refunds orders.
  Billing Team:
    model: {provider: script}
`
}

func TestConfig_handoffs_to_configured_agents_are_accepted(t *testing.T) {
	cfg, err := config.Parse([]byte(handoffAgents(`, handoffs: [refunds, Billing Team], handoff_history: last_user`, "max_handoffs: 3")))
	if err != nil {
		t.Fatal(err)
	}
	triage, _ := cfg.Agent("triage")
	if triage.HandoffHistory != config.HandoffHistoryLastUser || cfg.Runs.MaxHandoffs != 3 {
		t.Errorf("handoff_history %q, max_handoffs %d; want last_user, 3", triage.HandoffHistory, cfg.Runs.MaxHandoffs)
	}
	refunds, _ := cfg.Agent("refunds")
	if refunds.HandoffHistory != config.HandoffHistoryAll {
		t.Errorf("refunds' handoff_history %q; want the default all", refunds.HandoffHistory)
	}
	for tool, want := range map[string]string{"transfer_to_refunds": "refunds", "transfer_to_billing_team": "Billing Team"} {
		if got, ok := triage.HandoffTarget(tool); !ok || got != want {
			t.Errorf("HandoffTarget(%q) = %q, %v; want %q", tool, got, ok, want)
		}
	}
	if got, ok := triage.HandoffTarget("echo"); ok {
		t.Errorf("HandoffTarget(echo) = %q; want no handoff", got)
	}
}

func TestConfig_max_handoffs_defaults_to_ten(t *testing.T) {
	cfg, err := config.Parse([]byte(handoffAgents("", "")))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Runs.MaxHandoffs != config.DefaultMaxHandoffs || config.DefaultMaxHandoffs != 10 {
		t.Errorf("max_handoffs %d; want %d", cfg.Runs.MaxHandoffs, config.DefaultMaxHandoffs)
	}
}

func TestConfig_bad_handoffs_are_refused_each_with_its_path(t *testing.T) {
	cases := []struct{ name, triage, runs, want string }{
		{"an unknown agent", `, handoffs: [refunds, nobody]`, "",
			`agents.triage.handoffs[1]: unknown agent "nobody"`},
		{"the agent itself", `, handoffs: [triage]`, "",
			"agents.triage.handoffs[0]: an agent cannot hand a run to itself"},
		{"an agent twice", `, handoffs: [refunds, refunds]`, "",
			`agents.triage.handoffs[1]: its tool transfer_to_refunds is already the name of the handoff to "refunds"`},
		{"a tool's name", `, handoffs: [refunds], tools: [transfer_to_refunds]`, "",
			`agents.triage.handoffs[0]: its tool transfer_to_refunds is already the name of tool "transfer_to_refunds"`},
		{"an unknown history", `, handoffs: [refunds], handoff_history: some`, "",
			`agents.triage.handoff_history: "some"; want one of all, last_user`},
		{"a negative limit", "", "max_handoffs: -1", "runs.max_handoffs: -1 is negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse([]byte(handoffAgents(c.triage, c.runs)))
			if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v; want ErrInvalid with %q", err, c.want)
			}
		})
	}
}

func TestHandoffTool_and_description_are_named_as_the_agents_sdk_names_them(t *testing.T) {
	if got := config.HandoffTool("Refund-Desk 2"); got != "transfer_to_refund_desk_2" {
		t.Errorf("HandoffTool = %q", got)
	}
	if got := config.HandoffDescription("refunds", config.Agent{Description: "Refunds orders."}); got != "Handoff to the refunds agent to handle the request. Refunds orders." {
		t.Errorf("HandoffDescription = %q", got)
	}
	if got := config.HandoffDescription("refunds", config.Agent{}); got != "Handoff to the refunds agent to handle the request." {
		t.Errorf("HandoffDescription without a description = %q", got)
	}
}
