package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/model/providers"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
)

// SummaryKey is compaction's persistent state key: the run's latest
// compaction. It is written the moment a compaction is made (through
// plugin.Context.Keep, with the event context.compacted), never with the
// step's commit: a step redelivered before its commit, or taken over by
// another worker, finds it and sends the same prompt without asking the
// model again (ADR 0067).
var SummaryKey = plugin.Key[Summary]{Name: "compaction.summary", Persistent: true}

// CompactAction is the key of compaction's action, which runs at
// BeforeInference and brings the request within the budget; the plugin's
// hook schedules it every step.
const CompactAction = "compaction.compact"

// Defaults of the compaction plugin's settings.
const (
	DefaultKeepLast           = 6
	DefaultToolResultMaxBytes = 2000
)

// CompactionSettings are the settings of the compaction plugin.
type CompactionSettings struct {
	// BudgetTokens is the most a request may cost, by EstimateTokens:
	// system prompt, tools and messages. Required.
	BudgetTokens int `json:"budget_tokens"`
	// KeepLast is how many messages at the end of the conversation are
	// always sent as they are (more when the first of them is a tool
	// result: its call's turn is kept whole). 0 or absent: DefaultKeepLast.
	KeepLast int `json:"keep_last,omitempty"`
	// Summarise has a model summarise the turns left out (default); false
	// drops them, with a note to the model that they are.
	Summarise *bool `json:"summarise,omitempty"`
	// Model is the model that writes summaries, in the form of an agent's
	// model; absent: the run's own model.
	Model *config.Model `json:"model,omitempty"`
	// ToolResultMaxBytes is the longest tool result a prompt shows whole;
	// a longer one is shown by reference, to be read with fetch_result.
	// 0 or absent: DefaultToolResultMaxBytes.
	ToolResultMaxBytes int `json:"tool_result_max_bytes,omitempty"`
}

func (s *CompactionSettings) setDefaults() {
	if s.KeepLast == 0 {
		s.KeepLast = DefaultKeepLast
	}
	if s.ToolResultMaxBytes == 0 {
		s.ToolResultMaxBytes = DefaultToolResultMaxBytes
	}
	if s.Summarise == nil {
		yes := true
		s.Summarise = &yes
	}
}

// Validate reports every problem of the settings at once.
func (s CompactionSettings) Validate() error {
	var ps problems
	if s.BudgetTokens < 1 {
		ps.add("budget_tokens", "%d; want 1 or more tokens", s.BudgetTokens)
	}
	if s.KeepLast < 1 {
		ps.add("keep_last", "%d; want 1 or more messages", s.KeepLast)
	}
	if s.ToolResultMaxBytes < 1 {
		ps.add("tool_result_max_bytes", "%d; want 1 or more", s.ToolResultMaxBytes)
	}
	if s.Model != nil && !*s.Summarise {
		ps.add("model", "set, but summarise is false: nothing is summarised")
	}
	return ps.err()
}

// Summary is a compaction, as SummaryKey keeps it: messages [From,
// Through) of the run's conversation are left out of its prompts, with
// Text (a summary, when Summarised) in their place. From is the end of the
// run's input, which is always sent.
type Summary struct {
	From       int    `json:"from"`
	Through    int    `json:"through"`
	Summarised bool   `json:"summarised"`
	Text       string `json:"text,omitempty"`
	Step       int    `json:"step"` // the step that made it
}

// Compacted is the data of the event context.compacted: the compaction
// made (messages [From, Through) left out), and the request's estimated
// tokens before it (with the run's previous compaction, if any) and after.
type Compacted struct {
	From         int  `json:"from"`
	Through      int  `json:"through"`
	Summarised   bool `json:"summarised"`
	TokensBefore int  `json:"tokens_before"`
	TokensAfter  int  `json:"tokens_after"`
	BudgetTokens int  `json:"budget_tokens"`
}

type compaction struct {
	s     CompactionSettings
	model model.Model // the summaries' own; nil: the run's
}

// NewCompaction is the factory of the compaction plugin (seed 004's
// compaction and pruning): it keeps each inference request within
// budget_tokens. At BeforeInference, tool results longer than
// tool_result_max_bytes are shown by reference (read with the tool
// fetch_result, which the plugin offers and answers at ToolGate); when
// the request is still over the budget, the older turns — after the run's
// input, before the last keep_last messages, never parting a tool result
// from its call — are left out, summarised by a model or dropped, so that
// the rest takes at most half of what the budget leaves. The compaction is
// kept with the run at once (SummaryKey) and shown as the event
// context.compacted; later steps send it until the request is over the
// budget again, when the next compaction summarises it with the turns
// after it. A request that cannot be brought within the budget (its input
// and last turns alone are over) goes as small as it can be made.
//
// The run's history is never changed: only what the model is sent.
func NewCompaction(settings json.RawMessage) (plugin.Plugin, error) {
	var s CompactionSettings
	if err := decode(settings, &s); err != nil {
		return nil, err
	}
	s.setDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	c := compaction{s: s}
	if s.Model != nil {
		m, err := providers.New(*s.Model)
		if err != nil {
			return nil, fmt.Errorf("%w: model: %w", ErrInvalidSettings, err)
		}
		c.model = m
	}
	return c, nil
}

func (c compaction) Register(reg *plugin.Registrar) error {
	reg.StateKey(SummaryKey.Name, SummaryKey.Persistent)
	reg.Hook(pipeline.PhaseBeforeInference, func(context.Context, *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		return cmd, cmd.Schedule(CompactAction, nil)
	})
	reg.Hook(pipeline.PhaseToolGate, c.toolGate)
	return reg.Action(CompactAction, pipeline.PhaseBeforeInference, c.compact)
}

func (c compaction) toolGate(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
	if pc.Call == nil || pc.Call.Tool != FetchResult {
		return plugin.Command{}, nil
	}
	return fetchResult(*pc.Call, pc.Messages, c.s.ToolResultMaxBytes)
}

// compact is CompactAction's handler. The request's messages start with
// the run's conversation (pc.Messages); what other plugins added after it
// is kept.
func (c compaction) compact(ctx context.Context, pc *plugin.Context, _ json.RawMessage) (plugin.Command, error) {
	req := pc.Request
	if req == nil {
		return plugin.Command{}, fmt.Errorf("no inference request in phase %s", pc.Phase)
	}
	if !slices.ContainsFunc(req.Tools, func(t model.ToolSpec) bool { return t.Name == FetchResult }) {
		req.Tools = append(req.Tools, fetchResultSpec)
	}
	n := min(len(pc.Messages), len(req.Messages))
	conv, added := referenced(req.Messages[:n], c.s.ToolResultMaxBytes), req.Messages[n:]
	cost := func(msgs []pipeline.Message) int {
		return EstimateTokens(req.System, msgs, req.Tools) + messagesTokens(added)
	}
	from := inputEnd(conv)
	raw := pc.State[SummaryKey.Name]
	last, ok, err := SummaryKey.Get(pc.State)
	if err != nil || (ok && !fits(last, conv, from)) {
		ok = false // not one this conversation can use: a new one replaces it
	}
	prompt, cut := conv, from
	if ok {
		prompt, cut = withSummary(conv, last), last.Through
	}
	before := cost(prompt)
	if before <= c.s.BudgetTokens {
		req.Messages = slices.Concat(prompt, added)
		return plugin.Command{}, nil
	}
	// The summary may take a quarter of the budget; the turns kept, half
	// of the rest, so that a few steps go by before the next compaction.
	room := c.s.BudgetTokens / 4
	target := (c.s.BudgetTokens - room - cost(conv[:from])) / 2
	through, more := nextCut(conv, cut, c.s.KeepLast, target)
	if !more {
		req.Messages = slices.Concat(prompt, added) // as small as it gets
		return plugin.Command{}, nil
	}
	next := Summary{From: from, Through: through, Summarised: *c.s.Summarise, Step: pc.Run.Step}
	if next.Summarised {
		earlier := ""
		if ok {
			earlier = last.Text
		}
		if next.Text, err = c.summarise(ctx, pc, earlier, conv[cut:through], room*BytesPerToken); err != nil {
			return plugin.Command{}, err // this step goes uncompacted; the action is recorded as failed
		}
	}
	kept, err := c.keep(ctx, pc, raw, next, Compacted{From: from, Through: through, Summarised: next.Summarised,
		TokensBefore: before, TokensAfter: cost(withSummary(conv, next)), BudgetTokens: c.s.BudgetTokens})
	if err != nil {
		return plugin.Command{}, err
	}
	if fits(kept, conv, from) {
		prompt = withSummary(conv, kept)
	}
	req.Messages = slices.Concat(prompt, added)
	return plugin.Command{}, nil
}

// fits reports whether s can stand in a prompt of conv, whose input ends at
// from.
func fits(s Summary, conv []pipeline.Message, from int) bool {
	return s.From == from && s.Through > from && s.Through <= len(conv) && cuttable(conv, s.Through)
}

// summarise asks the summaries' model (or the run's) for a summary of
// msgs after earlier, cut to at most maxBytes.
func (c compaction) summarise(ctx context.Context, pc *plugin.Context, earlier string, msgs []pipeline.Message, maxBytes int) (string, error) {
	m := c.model
	if m == nil {
		m = pc.Model
	}
	if m == nil {
		return "", errors.New("no model to summarise with")
	}
	resp, err := m.Infer(ctx, model.Request{RunID: pc.Run.ID, Step: pc.Run.Step, System: summariserPrompt,
		Messages: []pipeline.Message{{Role: pipeline.RoleUser, Content: transcript(earlier, msgs)}}})
	if err != nil {
		return "", fmt.Errorf("summarise: %w", err)
	}
	return head(resp.Text, maxBytes), nil
}

// summariserPrompt is the system prompt of a summary's inference.
const summariserPrompt = "You condense the earlier part of a conversation between a user, an AI agent and the tools it called, " +
	"so that the agent can go on without it. Write a short summary that keeps every fact, number, name, identifier, " +
	"decision and open task the agent may need, and the ref of any tool result it may want to read again. " +
	"Answer with the summary only."

// keep writes next as the run's compaction if the key still holds raw,
// and returns the compaction the run keeps: next, or one another worker
// made first for this step.
func (c compaction) keep(ctx context.Context, pc *plugin.Context, raw json.RawMessage, next Summary, ev Compacted) (Summary, error) {
	if pc.Keep == nil {
		return Summary{}, errors.New("nothing to keep a compaction with in this phase")
	}
	value, err := json.Marshal(next)
	if err != nil {
		return Summary{}, err
	}
	kept, err := pc.Keep.Keep(ctx, SummaryKey.Name, raw, value, pipeline.EventContextCompacted, ev)
	if err != nil {
		return Summary{}, fmt.Errorf("keep the compaction: %w", err)
	}
	var s Summary
	if err := json.Unmarshal(kept, &s); err != nil {
		return Summary{}, fmt.Errorf("state %s: %w", SummaryKey.Name, err)
	}
	return s, nil
}
