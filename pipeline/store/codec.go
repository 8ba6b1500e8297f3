package store

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Hash codecs. Numbers are decimal strings, times unix milliseconds ("0" for
// none), raw JSON is stored as given ("" for none), a cleared lease is
// lease_owner "" and lease_until "0"; a field missing from a hash reads as
// "" (a new record is written without its empty fields: withoutEmpty).

// runFields is the run hash of a new run, as HSET arguments, its empty
// fields left out. Its id is not in it: its key names it (decodeRun takes
// it from the caller).
func runFields(r pipeline.Run) []any {
	return withoutEmpty(append([]any{
		"agent", r.Agent,
		"agent_ver", r.AgentVersion,
		"tenant", r.Tenant,
		"status", string(r.Status),
		"step", r.Step,
		"step_state", string(r.StepState),
		"term_reason", "",
		"term_code", "",
		"term_detail", "",
		"in_tok", r.Usage.InputTokens,
		"out_tok", r.Usage.OutputTokens,
		"model", string(r.Model),
		"metadata", string(r.Metadata),
		"req_hash", r.RequestHash,
		"trace", r.Trace,
		"batch", r.Batch,
		"bbudget", boolField(r.BatchBudget),
		"parent", r.ParentRunID,
		"parent_call", r.ParentCallID,
		"depth", depthField(r.Depth),
		"start_at", toMillis(r.StartAt),
		"schedule", r.ScheduleID,
		"tick", toMillis(r.TickAt),
		"attempts", r.Attempts,
		"lease_owner", r.LeaseOwner,
		"lease_until", toMillis(r.LeaseUntil),
		"created_at", toMillis(r.CreatedAt),
		"updated_at", toMillis(r.UpdatedAt),
		"rerun_of", r.RerunOf,
		"inference", string(r.Inference),
	}, originFields(r.ForkedFrom)...), "start_at", "tick")
}

// originFields are the hash fields of a fork's origin, none for another
// run.
func originFields(p *pipeline.ForkPoint) []any {
	if p == nil {
		return nil
	}
	return []any{"fork_of", p.RunID, "fork_step", p.Step}
}

// decodeRun reads a run hash. An empty hash is ErrNotFound.
func decodeRun(runID string, h fields) (pipeline.Run, error) {
	if h.size() == 0 {
		return pipeline.Run{}, fmt.Errorf("%w: run %s", ErrNotFound, runID)
	}
	d := fieldDecoder{h: h}
	r := pipeline.Run{
		ID:           runID,
		Agent:        h.get("agent"),
		Tenant:       cmp.Or(h.get("tenant"), pipeline.DefaultTenant),
		Status:       pipeline.RunStatus(h.get("status")),
		Step:         int(d.int("step")),
		StepState:    pipeline.StepState(h.get("step_state")),
		Usage:        pipeline.Usage{InputTokens: d.int("in_tok"), OutputTokens: d.int("out_tok"), CostUSD: pipeline.USD(d.int("cost"))},
		Model:        rawJSON(h.get("model")),
		Metadata:     rawJSON(h.get("metadata")),
		RequestHash:  h.get("req_hash"),
		Trace:        h.get("trace"),
		Batch:        h.get("batch"),
		BatchBudget:  h.get("bbudget") == "1",
		ParentRunID:  h.get("parent"),
		ParentCallID: h.get("parent_call"),
		Depth:        int(d.int("depth")),
		Children:     children(h),
		Attempts:     int(d.int("attempts")),
		LeaseOwner:   h.get("lease_owner"),
		Published:    h.get("published") == "1",
		RequestedAt:  sentAt(h.get("step_sent"), h.get("step")),
		DeferUntil:   sentAt(h.get("defer"), h.get("step")),
		LeaseUntil:   d.time("lease_until"),
		StartAt:      d.time("start_at"),
		ScheduleID:   h.get("schedule"),
		TickAt:       d.time("tick"),
		CreatedAt:    d.time("created_at"),
		UpdatedAt:    d.time("updated_at"),
	}
	r.RerunOf = h.get("rerun_of")
	r.Inference = pipeline.InferenceMode(h.get("inference"))
	if fork := h.get("fork_of"); fork != "" {
		r.ForkedFrom = &pipeline.ForkPoint{RunID: fork, Step: int(d.int("fork_step"))}
	}
	// holder: the agent a handoff gave the run to (commit_step.lua writes
	// it); none before the first.
	r.CurrentAgent = cmp.Or(h.get("holder"), r.Agent)
	r.AgentVersion = h.get("agent_ver") // the holder's: a handoff writes its target's
	r.Handoffs, r.HandoffCall = int(d.int("handoffs")), h.get("handoff_call")
	if reason := h.get("term_reason"); reason != "" {
		r.Termination = &pipeline.Termination{
			Reason: pipeline.TerminationReason(reason),
			Code:   h.get("term_code"),
			Detail: h.get("term_detail"),
		}
	}
	if d.err != nil {
		return pipeline.Run{}, fmt.Errorf("decode run %s: %w", runID, d.err)
	}
	return r, nil
}

// callFields is the hash of a call as CommitStep writes it, as HSET
// arguments: the record, its gate, its parking when parked, and the mark of
// a call its committer marked as being sent (DispatchedBy). Its ids are
// not in it: its key names them (decodeCall takes them from the caller).
// Nor are the fields a new call has at their defaults, which a missing
// field reads as (a field missing from a hash reads as "", a number as 0,
// in Go and in the scripts): its attempts, lease, decision, a parking's
// deadline, and its empty fields (withoutEmpty: no result yet). About a
// dozen bytes a field, for every call a run keeps.
func callFields(c pipeline.ToolCall) []any {
	// Room for the mark and a parking: an append past a slice's capacity
	// copies it whole, as most commits would.
	f := make([]any, 0, 20+2+14)
	f = append(f,
		"step", c.Step,
		"idx", c.Index,
		"tool", c.Tool,
		"queue", c.Queue,
		"status", string(c.Status),
		"args", string(c.Arguments),
		"result", string(c.Result),
		"error", c.Error,
		"updated_at", toMillis(c.UpdatedAt),
		"gate", string(c.Gate),
	)
	if c.DispatchedBy != "" { // the committer publishes it right after the commit
		f = append(f, "sent", beingSentMark(generation(c), c.DispatchedAt, c.DispatchedBy))
	}
	if c.Parking != nil {
		f = append(f, parkingFields(*c.Parking)...)
	}
	return withoutEmpty(f, "deadline")
}

// withoutEmpty drops from HSET arguments of a new record the fields whose
// value is the empty string, and those named in zero whose value is the
// number 0: a missing field reads as "" in Go (fields, and the `, _ :=` of
// an HMGET's nil) and as false in Lua, where the scripts take it for ""
// (or 0). About ten bytes a field.
func withoutEmpty(f []any, zero ...string) []any {
	set := f[:0]
	for i := 0; i < len(f); i += 2 {
		switch v := f[i+1].(type) {
		case string:
			if v == "" {
				continue
			}
		case int64:
			if v == 0 && slices.Contains(zero, f[i].(string)) {
				continue
			}
		}
		set = append(set, f[i], f[i+1])
	}
	return set
}

// hashOf reads HSET arguments as the hash they write: what a read of a
// hash written whole with them gives back.
func hashOf(args []any) pairsFields {
	h := make(pairsFields, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			h[i] = v
		case int:
			h[i] = strconv.Itoa(v)
		case int64:
			h[i] = strconv.FormatInt(v, 10)
		default:
			h[i] = fmt.Sprint(v)
		}
	}
	return h
}

// parkingFields are the hash fields of a call's parking, as HSET arguments.
// The zero Parking clears them (ticket "" reads back as no parking).
func parkingFields(p pipeline.Parking) []any {
	return []any{
		"ticket", p.Ticket,
		"park_reason", p.Reason,
		"args_hash", p.ArgsHash,
		"resume_mode", string(p.ResumeMode),
		"deadline", toMillis(p.Deadline),
		"on_timeout", p.OnTimeout,
		"parked_at", toMillis(p.ParkedAt),
		"child_run", p.ChildRunID,
	}
}

// decodeCall reads a call hash. An empty hash is ErrNotFound. Parking is nil
// unless the call has a ticket, Decision nil unless it has a decision id.
func decodeCall(runID, callID string, h fields) (pipeline.ToolCall, error) {
	if h.size() == 0 {
		return pipeline.ToolCall{}, fmt.Errorf("%w: call %s of run %s", ErrNotFound, callID, runID)
	}
	d := fieldDecoder{h: h}
	c := pipeline.ToolCall{
		ID:         callID,
		RunID:      runID,
		Step:       int(d.int("step")),
		Index:      int(d.int("idx")),
		Tool:       h.get("tool"),
		Queue:      h.get("queue"),
		Status:     pipeline.ToolCallStatus(h.get("status")),
		Arguments:  rawJSON(h.get("args")),
		Result:     rawJSON(h.get("result")),
		Error:      h.get("error"),
		Attempts:   int(d.int("attempts")),
		LeaseOwner: h.get("lease_owner"),
		LeaseUntil: d.time("lease_until"),
		UpdatedAt:  d.time("updated_at"),
		Gate:       pipeline.GateAction(h.get("gate")),
		OrigArgs:   rawJSON(h.get("orig_args")),
	}
	c.Parking = d.parking()
	if h.get("dec_id") != "" {
		c.Decision = &pipeline.Decided{
			ID:        h.get("dec_id"),
			Action:    h.get("dec_action"),
			DecidedBy: h.get("dec_by"),
			SignedBy:  h.get("dec_signed"),
			Reason:    h.get("dec_reason"),
			Timeout:   h.get("dec_timeout") == "1",
		}
	}
	c.DispatchedAt, c.DispatchedBy = readMark(h.get("sent"), generation(c))
	if d.err != nil {
		return pipeline.ToolCall{}, fmt.Errorf("decode call %s of run %s: %w", callID, runID, d.err)
	}
	return c, nil
}

// fieldDecoder parses numeric fields, keeping the first error.
type fieldDecoder struct {
	h   fields
	err error
}

func (d *fieldDecoder) int(field string) int64 {
	v := d.h.get(field)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("field %s: %w", field, err)
	}
	return n
}

func (d *fieldDecoder) time(field string) time.Time { return fromMillis(d.int(field)) }

// parking reads the parking fields (parkingFields): nil without a ticket.
func (d *fieldDecoder) parking() *pipeline.Parking {
	if d.h.get("ticket") == "" {
		return nil
	}
	return &pipeline.Parking{
		Ticket:     d.h.get("ticket"),
		Reason:     d.h.get("park_reason"),
		ArgsHash:   d.h.get("args_hash"),
		ResumeMode: pipeline.ResumeMode(d.h.get("resume_mode")),
		Deadline:   d.time("deadline"),
		OnTimeout:  d.h.get("on_timeout"),
		ParkedAt:   d.time("parked_at"),
		ChildRunID: d.h.get("child_run"),
	}
}

// toMillis is t in unix milliseconds, 0 for the zero time.
func toMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMillis is the UTC time of ms, the zero time for 0.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func rawJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// checkJSON refuses raw JSON that does not parse (empty is allowed: none).
func checkJSON(what string, raw json.RawMessage) error {
	if len(raw) > 0 && !json.Valid(raw) {
		return fmt.Errorf("%w: %s is not valid JSON", ErrInvalid, what)
	}
	return nil
}

// flatMap turns a script's HGETALL reply (field, value, field, value, …)
// into a map.
func flatMap(v any) (map[string]string, error) {
	p, err := pairs(v)
	if err != nil {
		return nil, err
	}
	h := make(map[string]string, p.size())
	for i := 0; i < len(p); i += 2 {
		h[p[i].(string)] = p[i+1].(string)
	}
	return h, nil
}

// depthField is a run's depth as a hash field: "" (left out) for a run
// nobody started.
func depthField(depth int) string {
	if depth == 0 {
		return ""
	}
	return strconv.Itoa(depth)
}

// childField prefixes a parent's field per child run: child:<call id> is
// "0" while the child is registered, "1" once it is started (MarkChild).
const childField = "child:"

// children reads a parent's child fields (nil for a run without any).
func children(h fields) map[string]bool {
	var out map[string]bool
	h.each(func(field, value string) {
		if call, ok := strings.CutPrefix(field, childField); ok {
			if out == nil {
				out = map[string]bool{}
			}
			out[call] = value == "1"
		}
	})
	return out
}

// fields is a hash as read: a map (an HGETALL through go-redis) or the
// field, value pairs a script returns (pairs), which are decoded where they
// are, without building a map.
type fields interface {
	get(field string) string // "" when absent
	size() int               // how many fields
	each(fn func(field, value string))
}

// mapFields is a hash read as a map.
type mapFields map[string]string

func (m mapFields) get(field string) string { return m[field] }
func (m mapFields) size() int               { return len(m) }
func (m mapFields) each(fn func(field, value string)) {
	for k, v := range m {
		fn(k, v)
	}
}

// pairsFields is a hash as a script's reply: field, value, field, value...,
// all strings (pairs checks). A run or call hash has a few dozen fields, so
// a scan finds one faster than a map is built.
type pairsFields []any

func (p pairsFields) get(field string) string {
	for i := 0; i < len(p); i += 2 {
		if p[i].(string) == field {
			return p[i+1].(string)
		}
	}
	return ""
}
func (p pairsFields) size() int { return len(p) / 2 }
func (p pairsFields) each(fn func(field, value string)) {
	for i := 0; i < len(p); i += 2 {
		fn(p[i].(string), p[i+1].(string))
	}
}

// pairs checks that v is a script's hash reply and returns its fields.
func pairs(v any) (pairsFields, error) {
	list, ok := v.([]any)
	if !ok || len(list)%2 != 0 {
		return nil, fmt.Errorf("unexpected hash reply %T", v)
	}
	for i, e := range list {
		if _, ok := e.(string); !ok {
			return nil, fmt.Errorf("unexpected hash entry %d: %T", i, e)
		}
	}
	return pairsFields(list), nil
}

// replyList is a script reply that is an array.
func replyList(v any, atLeast int) ([]any, error) {
	list, ok := v.([]any)
	if !ok || len(list) < atLeast {
		return nil, fmt.Errorf("unexpected script reply %T (want an array of at least %d)", v, atLeast)
	}
	return list, nil
}

// boolField is a boolean as a hash field: "1" or "".
func boolField(b bool) string {
	if b {
		return "1"
	}
	return ""
}
