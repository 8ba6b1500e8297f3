package versions_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

const base = `
agents:
  clerk: {model: {provider: script, turns: [{text: hi}]}, tools: [lookup], handoffs: [other]}
  other: {model: {provider: script, turns: [{text: hi}]}, description: does other things}
tools:
  lookup: {executor: {builtin: echo}, permission: ask, ask_when: "args.n > 1"}
  unused: {executor: {builtin: echo}}
`

func catalog(t *testing.T, st *store.Store, yaml string) *versions.Catalog {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	c, err := versions.New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func hashOf(t *testing.T, c *versions.Catalog, agent string) string {
	t.Helper()
	v, ok := c.Current(agent)
	if !ok {
		t.Fatalf("no agent %s", agent)
	}
	return v.Hash
}

// A version is its agent's definition, its tools' and its handoffs'
// descriptions: a change to any of them is another version, a change to
// anything else is not.
func TestCatalog_a_version_changes_with_the_agent_its_tools_and_its_handoffs_only(t *testing.T) {
	st := store.New(testinfra.RedisClient(t))
	was := hashOf(t, catalog(t, st, base), "clerk")
	for _, c := range []struct {
		name, from, to string
		changed        bool
	}{
		{"the same file", "", "", false},
		{"a tool it does not offer", "unused: {executor: {builtin: echo}}", "unused: {executor: {builtin: sleep}}", false},
		{"its tool's policy", `ask_when: "args.n > 1"`, `ask_when: "args.n > 2"`, true},
		{"its tool set", "tools: [lookup]", "tools: [lookup, unused]", true},
		{"its handoff target's description", "does other things", "does other stuff", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := hashOf(t, catalog(t, st, strings.Replace(base, c.from, c.to, 1)), "clerk")
			if (got != was) != c.changed {
				t.Fatalf("version %s, was %s; want changed: %v", got, was, c.changed)
			}
		})
	}
}

// A process that never had a version reads it by hash once it is pinned;
// one whose definition is gone is ErrLost.
func TestCatalog_a_pinned_version_reads_back_and_a_lost_one_is_ErrLost(t *testing.T) {
	rdb := testinfra.RedisClient(t)
	st := store.New(rdb)
	hash, err := catalog(t, st, base).Pin(t.Context(), "clerk")
	if err != nil || hash == "" {
		t.Fatalf("pin: %q %v", hash, err)
	}
	later := catalog(t, st, strings.Replace(base, "tools: [lookup]", "tools: []", 1))
	v, err := later.Get(t.Context(), hash)
	if err != nil {
		t.Fatal(err)
	}
	if tool, ok := v.Tool("lookup"); !ok || tool.Permission != config.PermissionAsk {
		t.Fatalf("lookup in the pinned version: %+v %v", tool, ok)
	}
	if cond, ok := v.AskWhen("lookup"); !ok || cond == nil {
		t.Fatal("the pinned ask_when is not compiled")
	}
	if v.Handoffs["other"] == "" {
		t.Fatalf("handoffs %+v", v.Handoffs)
	}

	if err := rdb.Del(t.Context(), store.DefaultPrefix+":agentver:"+hash).Err(); err != nil {
		t.Fatal(err)
	}
	fresh := catalog(t, st, strings.Replace(base, "tools: [lookup]", "tools: []", 1)) // another process: it never read the version
	if _, err := fresh.Get(t.Context(), hash); !errors.Is(err, versions.ErrLost) {
		t.Fatalf("a lost version: %v, want ErrLost", err)
	}
}
