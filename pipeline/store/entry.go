package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// entry is an event as its run's stream holds it: one stream entry of six
// plain fields, written by the script that makes the transition (lib.lua's
// emit), in the same order in every entry. Go builds it with what it knows;
// the script fills in what only it knows (the run's step, an attempt
// count, a message's index) by setting a field, never by cutting text.
// The entry's id is the event's id and the stream's run its run.
type entry struct {
	Type pipeline.EventType `json:"type"`
	Step int                `json:"step"`
	Call string             `json:"call,omitempty"`
	At   int64              `json:"at"`             // unix milliseconds
	Data string             `json:"data,omitempty"` // JSON, "" for none
	// Ref says where the rest of the data is kept, joined back when the
	// event is read (refs.go): "" the data is whole, refCall the event's
	// call hash, refMessage the conversation.
	Ref string `json:"ref,omitempty"`
}

// The places an entry's Ref names.
const (
	refCall    = "call"
	refMessage = "message"
)

// newEntry is the entry of an event of type typ at step (-1: the script
// puts in the run's) of call callID ("" for none) at now, with data
// marshalled unless nil (a json.RawMessage is checked and taken as it is).
func newEntry(step int, callID string, typ pipeline.EventType, now time.Time, data any) (entry, error) {
	e := entry{Type: typ, Step: step, Call: callID, At: toMillis(now)}
	switch d := data.(type) {
	case nil:
	case json.RawMessage:
		if !json.Valid(d) {
			return e, fmt.Errorf("event %s data: not JSON: %.40q", typ, d)
		}
		e.Data = string(d)
	default:
		raw, err := json.Marshal(d)
		if err != nil {
			return e, fmt.Errorf("event %s data: %w", typ, err)
		}
		e.Data = string(raw)
	}
	return e, nil
}

// decodeEntry reads a stream entry as the event it holds, its data as
// stored (refs not joined back).
func decodeEntry(runID string, m redis.XMessage) (pipeline.Event, error) {
	str := func(f string) string { s, _ := m.Values[f].(string); return s }
	ev := pipeline.Event{ID: m.ID, RunID: runID, Type: pipeline.EventType(str("type")), CallID: str("call")}
	if ev.Type == "" {
		return ev, fmt.Errorf("event %s of run %s has no type", m.ID, runID)
	}
	step, err := strconv.Atoi(str("step"))
	if err != nil {
		return ev, fmt.Errorf("event %s of run %s: step %q", m.ID, runID, str("step"))
	}
	at, err := strconv.ParseInt(str("at"), 10, 64)
	if err != nil {
		return ev, fmt.Errorf("event %s of run %s: time %q", m.ID, runID, str("at"))
	}
	ev.Step, ev.At = step, fromMillis(at)
	if d := str("data"); d != "" {
		ev.Data = json.RawMessage(d)
	}
	return ev, nil
}
