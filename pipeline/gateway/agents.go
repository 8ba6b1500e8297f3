package gateway

import (
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
