package gateway

import (
	"fmt"
	"net/http"

	"github.com/stepwise-run/stepwise/pipeline/store"
)

// maxCountedRuns bounds the live runs one GET /v1/agents reads to count
// them by version.
const maxCountedRuns = 100_000

// AgentView is an agent as GET /v1/agents lists it: its version in the
// gateway's configuration, the one new runs are pinned to, and how many
// runs that are not done are pinned to each of its versions.
type AgentView struct {
	Name     string              `json:"name"`
	Version  string              `json:"version,omitempty"` // "" when the gateway's configuration no longer has it
	Versions []store.VersionRuns `json:"versions"`
}

// AgentList is the answer of GET /v1/agents. Truncated: there were more
// live runs than one answer counts (maxCountedRuns).
type AgentList struct {
	Agents    []AgentView `json:"agents"`
	Truncated bool        `json:"truncated"`
}

// listAgents serves GET /v1/agents: the agents of the configuration, in
// name order, then those only live runs are still held by, each with its
// versions in use.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	counts, truncated, err := s.cfg.Store.LiveVersions(r.Context(), maxCountedRuns)
	if err != nil {
		s.fail(w, r, "the runs by version", err)
		return
	}
	out := AgentList{Agents: []AgentView{}, Truncated: truncated}
	at := map[string]int{} // name → index in out.Agents
	add := func(name string, version string) {
		at[name] = len(out.Agents)
		out.Agents = append(out.Agents, AgentView{Name: name, Version: version, Versions: []store.VersionRuns{}})
	}
	if vs := s.cfg.Versions; vs != nil {
		for _, name := range vs.Agents() {
			cur, _ := vs.Current(name)
			add(name, cur.Hash)
		}
	}
	for _, c := range counts { // sorted by agent
		if _, ok := at[c.Agent]; !ok {
			add(c.Agent, "")
		}
		a := &out.Agents[at[c.Agent]]
		a.Versions = append(a.Versions, c)
	}
	writeJSON(w, http.StatusOK, out)
}

// UpgradeResult is the answer of POST /v1/agents/{name}/upgrade: the
// version the agent's waiting runs were moved to and how many moved.
type UpgradeResult struct {
	Agent     string `json:"agent"`
	Version   string `json:"version"`
	Upgraded  int    `json:"upgraded"`
	Truncated bool   `json:"truncated"`
}

// upgradeAgent serves POST /v1/agents/{name}/upgrade: it moves the
// agent's waiting runs to its version in the gateway's configuration
// (pinned first, so Redis has it); their next steps use it. 404 for an
// agent the configuration does not have.
func (s *Server) upgradeAgent(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if s.cfg.Versions == nil {
		writeError(w, apiErr(http.StatusNotFound, CodeNotFound, "this gateway pins no versions"))
		return
	}
	if _, ok := s.cfg.Versions.Current(name); !ok {
		writeError(w, apiErr(http.StatusNotFound, CodeNotFound, fmt.Sprintf("no agent %q in the gateway's configuration", name)))
		return
	}
	version, err := s.cfg.Versions.Pin(r.Context(), name)
	if err != nil {
		s.fail(w, r, "pin the version of agent "+name, err)
		return
	}
	moved, truncated, err := s.cfg.Store.UpgradeWaiting(r.Context(), name, version, maxCountedRuns, s.cfg.Now())
	if err != nil {
		s.fail(w, r, "upgrade the waiting runs of agent "+name, err)
		return
	}
	writeJSON(w, http.StatusOK, UpgradeResult{Agent: name, Version: version, Upgraded: moved, Truncated: truncated})
}
