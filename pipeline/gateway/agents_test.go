package gateway_test

import (
	"net/http"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// versionedHarness is a gateway whose configuration has the agents
// assistant and helper, pinning runs to their versions.
func versionedHarness(t *testing.T) (*harness, *versions.Catalog) {
	t.Helper()
	cfg, err := config.Parse([]byte(`
agents:
  assistant: {model: {provider: script, turns: [{text: hi}]}, tools: [echo]}
  helper: {model: {provider: script, turns: [{text: hi}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	var vs *versions.Catalog
	h := newHarness(t, func(c *gateway.Config) {
		if vs, err = versions.New(cfg, c.Store); err != nil {
			t.Fatal(err)
		}
		c.Versions = vs
	})
	return h, vs
}

// A run is pinned to its agent's version in the gateway's configuration,
// and GET /v1/agents counts the runs that are not done by version.
func TestAgents_a_run_shows_its_version_and_the_agents_count_runs_by_version(t *testing.T) {
	h, vs := versionedHarness(t)
	assistant, _ := vs.Current("assistant")
	helper, _ := vs.Current("helper")
	for _, id := range []string{"a-1", "a-2"} {
		h.post("/v1/runs", map[string]any{"run_id": id, "agent": "assistant", "input": "hi"}).want(t, http.StatusCreated, nil)
	}
	var run gateway.RunView
	h.get("/v1/runs/a-1").want(t, http.StatusOK, &run)
	if run.AgentVersion != assistant.Hash {
		t.Fatalf("run a-1 is on version %q, want %q", run.AgentVersion, assistant.Hash)
	}
	if _, err := vs.Get(t.Context(), assistant.Hash); err != nil {
		t.Fatalf("the pinned version reads back: %v", err)
	}

	var list gateway.AgentList
	h.get("/v1/agents").want(t, http.StatusOK, &list)
	if len(list.Agents) != 2 || list.Truncated {
		t.Fatalf("agents %+v", list)
	}
	a, b := list.Agents[0], list.Agents[1]
	if a.Name != "assistant" || a.Version != assistant.Hash || len(a.Versions) != 1 ||
		a.Versions[0].Version != assistant.Hash || a.Versions[0].Runs != 2 {
		t.Fatalf("assistant %+v", a)
	}
	if b.Name != "helper" || b.Version != helper.Hash || len(b.Versions) != 0 {
		t.Fatalf("helper %+v", b)
	}
}

// An upgrade names an agent of the gateway's configuration; with no
// waiting runs it moves none.
func TestAgents_an_upgrade_of_an_unknown_agent_is_404_and_of_one_without_waiting_runs_moves_none(t *testing.T) {
	h, vs := versionedHarness(t)
	h.post("/v1/agents/nobody/upgrade", nil).wantError(t, http.StatusNotFound, gateway.CodeNotFound, "nobody")
	h.post("/v1/runs", map[string]any{"run_id": "h-1", "agent": "helper", "input": "hi"}).want(t, http.StatusCreated, nil)
	var res gateway.UpgradeResult
	h.post("/v1/agents/helper/upgrade", nil).want(t, http.StatusOK, &res)
	helper, _ := vs.Current("helper")
	if res.Agent != "helper" || res.Version != helper.Hash || res.Upgraded != 0 || res.Truncated {
		t.Fatalf("upgrade %+v", res)
	}
}
