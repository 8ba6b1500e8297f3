package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

// summariser is a model that answers every request with a numbered
// summary and remembers what it was asked.
type summariser struct{ asked []model.Request }

func (s *summariser) Infer(_ context.Context, req model.Request) (model.Response, error) {
	s.asked = append(s.asked, req)
	return model.Response{Text: fmt.Sprintf("summary %d: the user wants the total of the numbers.", len(s.asked))}, nil
}

// memKeeper is a plugin.Keeper over a state map, as the store keeps one:
// the first writer wins.
type memKeeper struct {
	state  plugin.State
	events []json.RawMessage
}

func (k *memKeeper) Keep(_ context.Context, key string, expect, value json.RawMessage, typ pipeline.EventType, data any) (json.RawMessage, error) {
	if typ != pipeline.EventContextCompacted {
		return nil, fmt.Errorf("event %s", typ)
	}
	if string(k.state[key]) != string(expect) {
		return k.state[key], nil
	}
	k.state[key] = value
	b, err := json.Marshal(data)
	k.events = append(k.events, b)
	return value, err
}

// conversation is a run's input and steps turns of one call each, whose
// results are resultBytes long.
func conversation(steps, resultBytes int) []pipeline.Message {
	msgs := []pipeline.Message{{Role: pipeline.RoleUser, Content: "Add up the numbers the tool gives you."}}
	for i := range steps {
		id := fmt.Sprintf("call_%d_0", i)
		msgs = append(msgs,
			pipeline.Message{Role: pipeline.RoleAssistant, Content: "next number", ToolCalls: []pipeline.ToolCallRequest{
				{ID: id, Name: "echo", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}}},
			pipeline.Message{Role: pipeline.RoleTool, ToolCallID: id, Content: fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat("x", resultBytes))})
	}
	return msgs
}

// compactStep runs BeforeInference of step on msgs, the run's state
// being k's, and returns the request as the model would get it.
func compactStep(t *testing.T, set *plugin.Set, k stateKeeper, m model.Model, step int, msgs []pipeline.Message) *plugin.Request {
	t.Helper()
	pc := &plugin.Context{
		Phase: pipeline.PhaseBeforeInference, Run: pipeline.Run{ID: "r-1", Step: step},
		State: k.read(), Messages: msgs, Model: m, Keep: k,
		Request: &plugin.Request{System: "You add numbers.", Messages: slices.Clone(msgs), Tools: agentTools()},
	}
	run(t, set, pc)
	return pc.Request
}

// stateKeeper is a Keeper whose state a step reads with its claim.
type stateKeeper interface {
	plugin.Keeper
	read() plugin.State
}

// read is a copy of the state, as a worker loads it with the claim.
func (k *memKeeper) read() plugin.State { return maps.Clone(k.state) }

// noOrphans fails the test when a tool message of msgs answers no call of
// an assistant message before it.
func noOrphans(t *testing.T, msgs []pipeline.Message) {
	t.Helper()
	asked := map[string]bool{}
	for i, m := range msgs {
		for _, c := range m.ToolCalls {
			asked[c.ID] = true
		}
		if m.Role == pipeline.RoleTool && !asked[m.ToolCallID] {
			t.Fatalf("message %d answers call %s, which no message before it makes", i, m.ToolCallID)
		}
	}
}

func TestCompaction_a_request_within_the_budget_goes_whole_with_fetch_result_offered(t *testing.T) {
	set := build(t, builtin.Compaction, `{"budget_tokens": 100000}`)
	k, m := &memKeeper{state: plugin.State{}}, &summariser{}
	msgs := conversation(3, 10)
	req := compactStep(t, set, k, m, 3, msgs)
	if !slices.EqualFunc(req.Messages, msgs, func(a, b pipeline.Message) bool { return a.Content == b.Content }) {
		t.Errorf("messages changed: %+v", req.Messages)
	}
	if !slices.Contains(toolNames(req.Tools), builtin.FetchResult) {
		t.Errorf("tools %v lack %s", toolNames(req.Tools), builtin.FetchResult)
	}
	if len(m.asked) != 0 || len(k.state) != 0 {
		t.Errorf("a request within the budget was compacted: %d summaries, state %v", len(m.asked), k.state)
	}
}

// A 300-step run: each request stays within the budget, keeps the run's
// input and never parts a tool result from its call; each compaction is
// kept once and a step run again reuses it.
func TestCompaction_every_request_of_a_long_run_stays_within_the_budget(t *testing.T) {
	for _, summarise := range []bool{true, false} {
		t.Run(fmt.Sprintf("summarise=%v", summarise), func(t *testing.T) {
			const budget = 2000
			set := build(t, builtin.Compaction, fmt.Sprintf(`{"budget_tokens": %d, "keep_last": 4, "summarise": %v}`, budget, summarise))
			k, m := &memKeeper{state: plugin.State{}}, &summariser{}
			all := conversation(300, 100)
			for step := 0; step <= 300; step++ {
				msgs := all[:1+2*step]
				req := compactStep(t, set, k, m, step, msgs)
				if got := builtin.EstimateTokens(req.System, req.Messages, req.Tools); got > budget {
					t.Fatalf("step %d: request of %d tokens, over the budget of %d", step, got, budget)
				}
				if req.Messages[0].Content != msgs[0].Content {
					t.Fatalf("step %d: the input is gone: %q", step, req.Messages[0].Content)
				}
				noOrphans(t, req.Messages)
				if last := req.Messages[len(req.Messages)-1]; last.Content != msgs[len(msgs)-1].Content {
					t.Fatalf("step %d: the last message is not the conversation's: %q", step, last.Content)
				}
				asked, kept := len(m.asked), len(k.events)
				again := compactStep(t, set, k, m, step, msgs)
				if len(m.asked) != asked || len(k.events) != kept || !slices.Equal(contents(again.Messages), contents(req.Messages)) {
					t.Fatalf("step %d run again: it compacted anew", step)
				}
			}
			if len(k.events) < 5 || (summarise && len(m.asked) != len(k.events)) || (!summarise && len(m.asked) != 0) {
				t.Fatalf("%d compactions, %d summaries", len(k.events), len(m.asked))
			}
			var last builtin.Compacted
			if err := json.Unmarshal(k.events[len(k.events)-1], &last); err != nil || last.From != 1 || last.TokensAfter > budget ||
				last.TokensBefore <= budget || last.Summarised != summarise {
				t.Fatalf("last compaction %+v, %v", last, err)
			}
			if summarise {
				if prev := m.asked[len(m.asked)-1].Messages[0].Content; !strings.Contains(prev, fmt.Sprintf("summary %d:", len(m.asked)-1)) {
					t.Errorf("a summary does not build on the one before: %.200q", prev)
				}
			}
		})
	}
}

func contents(msgs []pipeline.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

// Two workers that compact the same step: the second gets the first's.
func TestCompaction_a_compaction_kept_first_by_another_worker_is_the_one_sent(t *testing.T) {
	set := build(t, builtin.Compaction, `{"budget_tokens": 800, "keep_last": 2}`)
	m := &summariser{}
	msgs := conversation(20, 100)
	first := &memKeeper{state: plugin.State{}}
	want := compactStep(t, set, first, m, 20, msgs)
	// The second read the state before the first kept its compaction.
	late := &lateKeeper{memKeeper: memKeeper{state: plugin.State{}}, other: first.state}
	got := compactStep(t, set, late, m, 20, msgs)
	if !slices.Equal(contents(got.Messages), contents(want.Messages)) {
		t.Errorf("the second worker sent %q; want the first's %q", contents(got.Messages), contents(want.Messages))
	}
}

// lateKeeper finds other's state in place when it writes.
type lateKeeper struct {
	memKeeper
	other plugin.State
}

func (k *lateKeeper) Keep(ctx context.Context, key string, expect, value json.RawMessage, typ pipeline.EventType, data any) (json.RawMessage, error) {
	k.state = k.other
	return k.memKeeper.Keep(ctx, key, expect, value, typ, data)
}

// A summary that fails leaves the step's request whole and is recorded.
func TestCompaction_a_failed_summary_is_recorded_and_the_request_goes_whole(t *testing.T) {
	set := build(t, builtin.Compaction, `{"budget_tokens": 800, "keep_last": 2}`)
	msgs := conversation(20, 100)
	pc := &plugin.Context{
		Phase: pipeline.PhaseBeforeInference, Run: pipeline.Run{ID: "r-1", Step: 20}, State: plugin.State{}, Messages: msgs,
		Model: failing{}, Keep: &memKeeper{state: plugin.State{}},
		Request: &plugin.Request{Messages: slices.Clone(msgs)},
	}
	if _, err := set.Run(context.Background(), pc, nil); err != nil {
		t.Fatal(err)
	}
	if len(pc.Failed) != 1 || pc.Failed[0].Key != builtin.CompactAction || !strings.Contains(pc.Failed[0].Error, "model down") {
		t.Fatalf("failed %+v", pc.Failed)
	}
	if len(pc.Request.Messages) != len(msgs) {
		t.Errorf("request of %d messages; want the %d of the conversation", len(pc.Request.Messages), len(msgs))
	}
}

type failing struct{}

func (failing) Infer(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, errors.New("model down")
}

// A long tool result is shown by reference, and fetch_result reads it
// piece by piece to its end.
func TestCompaction_a_long_tool_result_is_shown_by_reference_and_read_with_fetch_result(t *testing.T) {
	set := build(t, builtin.Compaction, `{"budget_tokens": 100000, "tool_result_max_bytes": 100}`)
	msgs := conversation(2, 10)
	long := strings.Repeat("é0123456789", 30) // 360 bytes
	msgs[4].Content = long
	req := compactStep(t, set, &memKeeper{state: plugin.State{}}, &summariser{}, 2, msgs)
	if shown := req.Messages[4].Content; !strings.Contains(shown, `ref "call_1_0"`) || len(shown) > 400 || req.Messages[2].Content != msgs[2].Content {
		t.Fatalf("shown %q and %q", shown, req.Messages[2].Content)
	}
	if msgs[4].Content != long {
		t.Fatal("the conversation itself was changed")
	}
	var read strings.Builder
	args := `{"ref":"call_1_0"}`
	for range 10 {
		pc := gateIn(t, set, msgs, builtin.FetchResult, args)
		var piece string
		if err := json.Unmarshal(pc.Intercepts[0].Result, &piece); err != nil {
			t.Fatal(err)
		}
		text, notice, _ := strings.Cut(piece, "\n[stepwise: ")
		read.WriteString(text)
		if strings.Contains(notice, "its end") {
			break
		}
		_, next, _ := strings.Cut(notice, `the next piece: fetch_result `)
		args = strings.TrimSuffix(next, "]")
	}
	if read.String() != long {
		t.Fatalf("read %q; want %q", read.String(), long)
	}
	// A piece is shown whole, however long its notice makes it.
	var piece string
	if err := json.Unmarshal(gateIn(t, set, msgs, builtin.FetchResult, `{"ref":"call_1_0"}`).Intercepts[0].Result, &piece); err != nil {
		t.Fatal(err)
	}
	fetched := append(slices.Clone(msgs),
		pipeline.Message{Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCallRequest{{ID: "f1", Name: builtin.FetchResult, Arguments: json.RawMessage(`{"ref":"call_1_0"}`)}}},
		pipeline.Message{Role: pipeline.RoleTool, ToolCallID: "f1", Content: piece})
	req = compactStep(t, set, &memKeeper{state: plugin.State{}}, &summariser{}, 3, fetched)
	if shown := req.Messages[len(req.Messages)-1].Content; shown != piece || len(piece) <= 100 {
		t.Errorf("the piece (%d bytes) is shown as %q", len(piece), shown)
	}
	for args, want := range map[string]string{
		`{"ref":"nope"}`:                 `no tool result of this run has ref "nope"`,
		`{"offset":-1,"ref":"call_1_0"}`: "invalid arguments for fetch_result",
		`[]`:                             "invalid arguments for fetch_result",
	} {
		if pc := gateIn(t, set, msgs, builtin.FetchResult, args); !strings.Contains(pc.Intercepts[0].Error, want) {
			t.Errorf("%s: error %q; want %q", args, pc.Intercepts[0].Error, want)
		}
	}
	if pc := gateIn(t, set, msgs, "echo", `{}`); len(pc.Intercepts) != 0 {
		t.Errorf("another tool's call got %+v", pc.Intercepts)
	}
}

// gateIn runs ToolGate for one call, the conversation being msgs; it
// returns the context, with the one set_result intercept a fetch_result
// call gets.
func gateIn(t *testing.T, set *plugin.Set, msgs []pipeline.Message, tool, args string) *plugin.Context {
	t.Helper()
	pc := &plugin.Context{
		Phase: pipeline.PhaseToolGate, Run: pipeline.Run{ID: "r-1"}, State: plugin.State{}, Messages: msgs,
		Call: &pipeline.ToolCall{ID: "c-9", Tool: tool, Arguments: json.RawMessage(args)},
	}
	run(t, set, pc)
	if tool == builtin.FetchResult && (len(pc.Intercepts) != 1 || pc.Intercepts[0].Action != pipeline.GateSetResult) {
		t.Fatalf("intercepts %+v; want one set_result", pc.Intercepts)
	}
	return pc
}

func TestCompaction_settings_are_checked(t *testing.T) {
	for _, c := range []struct{ settings, want string }{
		{`{}`, "budget_tokens: 0; want 1 or more tokens"},
		{`{"budget_tokens": 10, "keep_last": -1, "tool_result_max_bytes": -2}`, "keep_last: -1"},
		{`{"budget_tokens": 10, "tool_result_max_bytes": -2}`, "tool_result_max_bytes: -2"},
		{`{"budget_tokens": 10, "summarise": false, "model": {"provider": "script"}}`, "summarise is false"},
		{`{"budget_tokens": 10, "model": {"provider": "nope"}}`, `unknown provider "nope"`},
		{`{"budget_tokens": 10, "budget": 5}`, `unknown field "budget"`},
	} {
		_, err := builtin.Registry().Build(map[string]json.RawMessage{builtin.Compaction: json.RawMessage(c.settings)})
		if !errors.Is(err, builtin.ErrInvalidSettings) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.settings, err, c.want)
		}
	}
}
