package builtin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
)

// State keys of the deferred_tools plugin, both persistent.
var (
	// DeferredKey lists the deferred tools, sorted. Unset until the
	// plugin's first hook of a run sets it to the settings' defer list;
	// from then on only the actions and tool_search change it.
	DeferredKey = plugin.Key[[]string]{Name: "deferred_tools.deferred", Persistent: true}
	// DeferredCatalogKey holds, by name, the spec of every tool the plugin
	// has taken out of a request: what tool_search searches and what a
	// promotion puts back.
	DeferredCatalogKey = plugin.Key[map[string]model.ToolSpec]{Name: "deferred_tools.catalog", Persistent: true}
)

// Action keys of the deferred_tools plugin; all run at BeforeInference and
// keep the request's tool list in line with DeferredKey.
const (
	DeferAction   = "deferred_tools.defer"   // payload ["tool", ...]: defer these tools
	PromoteAction = "deferred_tools.promote" // payload ["tool", ...]: offer these tools again
	ApplyAction   = "deferred_tools.apply"   // no payload: the plugin's own hook schedules it every step
)

// ToolSearch is the name of the tool the plugin offers while tools are
// deferred. Its calls never reach a tool worker: ToolGate answers them.
const ToolSearch = "tool_search"

// toolSearchSpec is the tool_search tool as the model is told about it.
var toolSearchSpec = model.ToolSpec{
	Name: ToolSearch,
	Description: "Search for tools that are available to you but not yet in your tool list. " +
		"Describe what you need in a few words; the matching tools are returned with their parameters " +
		"and are in your tool list from your next step. An empty query lists them all.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string",` +
		`"description":"words that describe the tool you need"}},"required":["query"]}`),
}

// DeferredToolsSettings are the settings of the deferred_tools plugin.
type DeferredToolsSettings struct {
	// Defer lists the tools deferred when a run starts. Optional: without
	// it nothing is deferred until a DeferAction says so.
	Defer []string `json:"defer,omitempty"`
}

// Validate reports every problem of the settings at once.
func (s DeferredToolsSettings) Validate() error {
	var ps problems
	checkNames(&ps, "defer", s.Defer)
	for i, n := range s.Defer {
		if n == ToolSearch {
			ps.add(fmt.Sprintf("defer[%d]", i), "%s is the plugin's own tool and cannot be deferred", ToolSearch)
		}
	}
	return ps.err()
}

type deferredTools struct{ initial []string }

// NewDeferredTools is the factory of the deferred_tools plugin. Deferred
// tools are kept out of the model's tool list; while any is, the list holds
// tool_search instead. A tool_search call is answered at ToolGate with the
// specs (name, description, parameters) of the deferred tools that match
// its query, and promotes them: they are offered from the next step. The
// actions DeferAction and PromoteAction move tools between the lists.
//
// A call of a deferred tool the model names anyway is not stopped: the tool
// is still the agent's.
func NewDeferredTools(settings json.RawMessage) (plugin.Plugin, error) {
	var s DeferredToolsSettings
	if err := decode(settings, &s); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	initial := slices.Clone(s.Defer)
	slices.Sort(initial)
	return deferredTools{initial: initial}, nil
}

func (d deferredTools) Register(reg *plugin.Registrar) error {
	reg.StateKey(DeferredKey.Name, DeferredKey.Persistent)
	reg.StateKey(DeferredCatalogKey.Name, DeferredCatalogKey.Persistent)
	reg.Hook(pipeline.PhaseRunStart, d.runStart)
	reg.Hook(pipeline.PhaseBeforeInference, d.beforeInference)
	reg.Hook(pipeline.PhaseToolGate, d.toolGate)
	return errors.Join(
		reg.Action(DeferAction, pipeline.PhaseBeforeInference, d.deferTools),
		reg.Action(PromoteAction, pipeline.PhaseBeforeInference, d.promote),
		reg.Action(ApplyAction, pipeline.PhaseBeforeInference, d.apply),
	)
}

// deferred returns the deferred tools; when the key is unset (the run's
// first hook) it returns the settings' list and sets the key to it in cmd.
func (d deferredTools) deferred(s plugin.State, cmd *plugin.Command) ([]string, error) {
	list, ok, err := DeferredKey.Get(s)
	if err != nil || ok {
		return list, err
	}
	list = slices.Clone(d.initial)
	if list == nil {
		list = []string{} // set, so a run that promoted everything is not deferred again
	}
	return list, DeferredKey.Set(cmd, list)
}

func (d deferredTools) runStart(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
	var cmd plugin.Command
	_, err := d.deferred(pc.State, &cmd)
	return cmd, err
}

// beforeInference schedules ApplyAction rather than changing the request:
// hooks do not touch the request, and the action runs in the convergence
// loop, together with any DeferAction and PromoteAction of the phase.
func (d deferredTools) beforeInference(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
	var cmd plugin.Command
	if _, err := d.deferred(pc.State, &cmd); err != nil {
		return cmd, err
	}
	return cmd, cmd.Schedule(ApplyAction, nil)
}

func (d deferredTools) deferTools(_ context.Context, pc *plugin.Context, raw json.RawMessage) (plugin.Command, error) {
	names, err := toolNames(raw)
	if err != nil {
		return plugin.Command{}, err
	}
	if slices.Contains(names, ToolSearch) {
		return plugin.Command{}, fmt.Errorf("payload: %s is the plugin's own tool and cannot be deferred", ToolSearch)
	}
	return d.change(pc, func(list []string) []string {
		for _, n := range names {
			if !slices.Contains(list, n) {
				list = append(list, n)
			}
		}
		return list
	}, nil)
}

func (d deferredTools) promote(_ context.Context, pc *plugin.Context, raw json.RawMessage) (plugin.Command, error) {
	names, err := toolNames(raw)
	if err != nil {
		return plugin.Command{}, err
	}
	return d.change(pc, func(list []string) []string {
		return slices.DeleteFunc(list, func(n string) bool { return slices.Contains(names, n) })
	}, names)
}

func (d deferredTools) apply(_ context.Context, pc *plugin.Context, _ json.RawMessage) (plugin.Command, error) {
	return d.change(pc, func(list []string) []string { return list }, nil)
}

// change applies edit to the deferred list, records it, and brings the
// request in line: deferred tools out (their specs into the catalog),
// restored tools back in from the catalog, tool_search in while a
// deferred tool is known.
func (d deferredTools) change(pc *plugin.Context, edit func([]string) []string, restore []string) (plugin.Command, error) {
	var cmd plugin.Command
	req := pc.Request
	if req == nil {
		return cmd, fmt.Errorf("no inference request in phase %s", pc.Phase)
	}
	before, err := d.deferred(pc.State, &cmd)
	if err != nil {
		return cmd, err
	}
	list := edit(slices.Clone(before))
	slices.Sort(list)
	if !slices.Equal(list, before) {
		if err := DeferredKey.Set(&cmd, list); err != nil {
			return cmd, err
		}
	}
	catalog, _, err := DeferredCatalogKey.Get(pc.State)
	if err != nil {
		return cmd, err
	}
	if catalog == nil {
		catalog = map[string]model.ToolSpec{}
	}
	changed := false
	tools := make([]model.ToolSpec, 0, len(req.Tools)+1)
	for _, t := range req.Tools {
		switch {
		case isToolSearch(t):
			// put back below if still needed
		case slices.Contains(list, t.Name):
			if old, ok := catalog[t.Name]; !ok || !sameSpec(old, t) {
				catalog[t.Name] = t
				changed = true
			}
		default:
			tools = append(tools, t)
		}
	}
	for _, n := range restore {
		spec, known := catalog[n]
		if known && !slices.Contains(list, n) && !slices.ContainsFunc(tools, func(t model.ToolSpec) bool { return t.Name == n }) {
			tools = append(tools, spec)
		}
	}
	if slices.ContainsFunc(list, func(n string) bool { _, ok := catalog[n]; return ok }) {
		tools = append(tools, toolSearchSpec)
	}
	req.Tools = tools
	if changed {
		err = DeferredCatalogKey.Set(&cmd, catalog)
	}
	return cmd, err
}

// toolGate answers tool_search calls with a set_result intercept, and
// promotes the tools found: the promotion is a state update of this
// phase, so it holds at the next step's BeforeInference (an action for
// that phase would not outlive this process).
func (d deferredTools) toolGate(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
	var cmd plugin.Command
	if pc.Call == nil || pc.Call.Tool != ToolSearch {
		return cmd, nil
	}
	in := pipeline.Intercept{Action: pipeline.GateSetResult, Reason: "answered by the deferred_tools plugin"}
	var args struct {
		Query string `json:"query"`
	}
	raw := pc.Call.Arguments
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		in.Error = `invalid arguments for tool_search: want {"query": "words that describe the tool you need"}`
	} else {
		deferred, err := d.deferred(pc.State, &cmd)
		if err != nil {
			return cmd, err
		}
		catalog, _, err := DeferredCatalogKey.Get(pc.State)
		if err != nil {
			return cmd, err
		}
		found := searchTools(catalog, args.Query)
		rest := slices.DeleteFunc(slices.Clone(deferred), func(n string) bool {
			return slices.ContainsFunc(found, func(t model.ToolSpec) bool { return t.Name == n })
		})
		if len(rest) != len(deferred) {
			if err := DeferredKey.Set(&cmd, rest); err != nil {
				return cmd, err
			}
		}
		if in.Result, err = json.Marshal(searchAnswer(catalog, args.Query, found)); err != nil {
			return cmd, err
		}
	}
	return cmd, cmd.Schedule(plugin.ToolIntercept, plugin.Intercept{Intercept: in, CallID: pc.Call.ID})
}

// SearchResult is the result of a tool_search call.
type SearchResult struct {
	Tools   []model.ToolSpec `json:"tools"`
	Message string           `json:"message"`
}

func searchAnswer(catalog map[string]model.ToolSpec, query string, found []model.ToolSpec) SearchResult {
	out := SearchResult{Tools: found}
	if out.Tools == nil {
		out.Tools = []model.ToolSpec{}
	}
	switch {
	case len(catalog) == 0:
		out.Message = "No tools are deferred: every tool you may call is already in your tool list."
	case len(found) == 0:
		out.Message = fmt.Sprintf("No deferred tool matches %q. Tools you can search for: %s.",
			query, strings.Join(slices.Sorted(maps.Keys(catalog)), ", "))
	default:
		names := make([]string, len(found))
		for i, t := range found {
			names[i] = t.Name
		}
		out.Message = fmt.Sprintf("Found %d tool(s); they are in your tool list from your next step: %s.",
			len(found), strings.Join(names, ", "))
	}
	return out
}

// searchTools returns the catalog's tools that match query, best first:
// a tool scores one per query word found in its name or description
// (case-insensitive); ties go by name. An empty query matches every tool.
func searchTools(catalog map[string]model.ToolSpec, query string) []model.ToolSpec {
	words := strings.Fields(strings.ToLower(query))
	type hit struct {
		spec  model.ToolSpec
		score int
	}
	var hits []hit
	for _, name := range slices.Sorted(maps.Keys(catalog)) {
		spec := catalog[name]
		text := strings.ToLower(name + " " + strings.NewReplacer("_", " ", "-", " ", ".", " ").Replace(name) + " " + spec.Description)
		score := 0
		for _, w := range words {
			if strings.Contains(text, w) {
				score++
			}
		}
		if score > 0 || len(words) == 0 {
			hits = append(hits, hit{spec, score})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return cmp.Compare(b.score, a.score) })
	out := make([]model.ToolSpec, len(hits))
	for i, h := range hits {
		out[i] = h.spec
	}
	return out
}

// toolNames decodes the payload of DeferAction and PromoteAction.
func toolNames(raw json.RawMessage) ([]string, error) {
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		return nil, fmt.Errorf(`payload: want ["tool", ...]: %w`, err)
	}
	if slices.Contains(names, "") {
		return nil, fmt.Errorf("payload: empty tool name")
	}
	return names, nil
}

func isToolSearch(t model.ToolSpec) bool {
	return t.Name == ToolSearch && t.Description == toolSearchSpec.Description
}

// sameSpec compares specs as JSON, so parameters that differ only in
// spacing are the same.
func sameSpec(a, b model.ToolSpec) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
