package store

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Hash codecs. Numbers are decimal strings, times unix milliseconds ("0" for
// none), raw JSON is stored as given ("" for none), a cleared lease is
// lease_owner "" and lease_until "0".

// runFields is the complete run hash of a new run, as HSET arguments.
func runFields(r pipeline.Run) []any {
	return []any{
		"id", r.ID,
		"agent", r.Agent,
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
		"attempts", r.Attempts,
		"lease_owner", r.LeaseOwner,
		"lease_until", toMillis(r.LeaseUntil),
		"created_at", toMillis(r.CreatedAt),
		"updated_at", toMillis(r.UpdatedAt),
	}
}

// decodeRun reads a run hash. An empty hash is ErrNotFound.
func decodeRun(runID string, h map[string]string) (pipeline.Run, error) {
	if len(h) == 0 {
		return pipeline.Run{}, fmt.Errorf("%w: run %s", ErrNotFound, runID)
	}
	d := fieldDecoder{h: h}
	r := pipeline.Run{
		ID:          h["id"],
		Agent:       h["agent"],
		Tenant:      cmp.Or(h["tenant"], pipeline.DefaultTenant),
		Status:      pipeline.RunStatus(h["status"]),
		Step:        int(d.int("step")),
		StepState:   pipeline.StepState(h["step_state"]),
		Usage:       pipeline.Usage{InputTokens: d.int("in_tok"), OutputTokens: d.int("out_tok"), CostUSD: pipeline.USD(d.int("cost"))},
		Model:       rawJSON(h["model"]),
		Metadata:    rawJSON(h["metadata"]),
		RequestHash: h["req_hash"],
		Trace:       h["trace"],
		Batch:       h["batch"],
		BatchBudget: h["bbudget"] == "1",
		Attempts:    int(d.int("attempts")),
		LeaseOwner:  h["lease_owner"],
		Published:   h["published"] == "1",
		RequestedAt: sentAt(h["step_sent"], h["step"]),
		DeferUntil:  sentAt(h["defer"], h["step"]),
		LeaseUntil:  d.time("lease_until"),
		CreatedAt:   d.time("created_at"),
		UpdatedAt:   d.time("updated_at"),
	}
	if reason := h["term_reason"]; reason != "" {
		r.Termination = &pipeline.Termination{
			Reason: pipeline.TerminationReason(reason),
			Code:   h["term_code"],
			Detail: h["term_detail"],
		}
	}
	if d.err != nil {
		return pipeline.Run{}, fmt.Errorf("decode run %s: %w", runID, d.err)
	}
	return r, nil
}

// callFields is the complete hash of a call as CommitStep writes it, as HSET
// arguments: the record, its gate, its parking (empty fields unless parked)
// and empty decision fields. Lease and attempts start cleared.
func callFields(c pipeline.ToolCall) []any {
	f := []any{
		"id", c.ID,
		"run_id", c.RunID,
		"step", c.Step,
		"idx", c.Index,
		"tool", c.Tool,
		"queue", c.Queue,
		"status", string(c.Status),
		"args", string(c.Arguments),
		"result", string(c.Result),
		"error", c.Error,
		"attempts", 0,
		"lease_owner", "",
		"lease_until", 0,
		"updated_at", toMillis(c.UpdatedAt),
		"gate", string(c.Gate),
		"orig_args", "",
		"dec_id", "",
		"dec_action", "",
		"dec_by", "",
		"dec_reason", "",
		"dec_timeout", "0",
	}
	var p pipeline.Parking
	if c.Parking != nil {
		p = *c.Parking
	}
	return append(f, parkingFields(p)...)
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
	}
}

// decodeCall reads a call hash. An empty hash is ErrNotFound. Parking is nil
// unless the call has a ticket, Decision nil unless it has a decision id.
func decodeCall(runID, callID string, h map[string]string) (pipeline.ToolCall, error) {
	if len(h) == 0 {
		return pipeline.ToolCall{}, fmt.Errorf("%w: call %s of run %s", ErrNotFound, callID, runID)
	}
	d := fieldDecoder{h: h}
	c := pipeline.ToolCall{
		ID:         h["id"],
		RunID:      h["run_id"],
		Step:       int(d.int("step")),
		Index:      int(d.int("idx")),
		Tool:       h["tool"],
		Queue:      h["queue"],
		Status:     pipeline.ToolCallStatus(h["status"]),
		Arguments:  rawJSON(h["args"]),
		Result:     rawJSON(h["result"]),
		Error:      h["error"],
		Attempts:   int(d.int("attempts")),
		LeaseOwner: h["lease_owner"],
		LeaseUntil: d.time("lease_until"),
		UpdatedAt:  d.time("updated_at"),
		Gate:       pipeline.GateAction(h["gate"]),
		OrigArgs:   rawJSON(h["orig_args"]),
	}
	if h["ticket"] != "" {
		c.Parking = &pipeline.Parking{
			Ticket:     h["ticket"],
			Reason:     h["park_reason"],
			ArgsHash:   h["args_hash"],
			ResumeMode: pipeline.ResumeMode(h["resume_mode"]),
			Deadline:   d.time("deadline"),
			OnTimeout:  h["on_timeout"],
			ParkedAt:   d.time("parked_at"),
		}
	}
	if h["dec_id"] != "" {
		c.Decision = &pipeline.Decided{
			ID:        h["dec_id"],
			Action:    h["dec_action"],
			DecidedBy: h["dec_by"],
			Reason:    h["dec_reason"],
			Timeout:   h["dec_timeout"] == "1",
		}
	}
	c.DispatchedAt = sentAt(h["sent"], generation(c))
	if d.err != nil {
		return pipeline.ToolCall{}, fmt.Errorf("decode call %s of run %s: %w", callID, runID, d.err)
	}
	return c, nil
}

// fieldDecoder parses numeric fields, keeping the first error.
type fieldDecoder struct {
	h   map[string]string
	err error
}

func (d *fieldDecoder) int(field string) int64 {
	v := d.h[field]
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
	list, ok := v.([]any)
	if !ok || len(list)%2 != 0 {
		return nil, fmt.Errorf("unexpected hash reply %T", v)
	}
	h := make(map[string]string, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		k, ok1 := list[i].(string)
		val, ok2 := list[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("unexpected hash entry %T=%T", list[i], list[i+1])
		}
		h[k] = val
	}
	return h, nil
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
