package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// eventField is the one field of a stream entry; its value is the event
// without its ID (the entry id is the ID).
const eventField = "e"

// An event is stored as the JSON array [type, step, call id, time, data]:
// the type as its code (eventCodes), the call id "" when it has none, the
// time in unix nanoseconds, the data left out when it has none. Its id is
// the entry's and its run id the stream's (decodeEvents puts both back),
// so a run's events repeat neither. The array holds what the object
// {"type", "step", "call_id", "at", "data"} of the stores before 2026-11-26
// held (decodeEvents still reads those) in about 45 bytes less: the keys,
// and a time of 19 digits instead of 32 characters of RFC 3339. Its JSON
// begins with the type's code.

// eventCodes are the numbers that stand for the event types in a stored
// event (ADR 0042): a number of one or two digits instead of a name of 11
// to 19 characters and its quotes, in every event a run keeps. A code is
// never given to another type; a type without one (none today) is stored
// by its name, as every type was before 2026-11-27, and such events still
// read.
var eventCodes = map[pipeline.EventType]int{
	pipeline.EventRunCreated:       1,
	pipeline.EventRunStarted:       2,
	pipeline.EventStepStarted:      3,
	pipeline.EventAssistantMessage: 4,
	pipeline.EventTextDelta:        5,
	pipeline.EventToolCallCreated:  6,
	pipeline.EventToolCallStarted:  7,
	pipeline.EventToolCallFinished: 8,
	pipeline.EventStepEnded:        9,
	pipeline.EventStepRetried:      10,
	pipeline.EventStepDeferred:     11,
	pipeline.EventToolCallRetried:  12,
	pipeline.EventRunFinished:      13,
	pipeline.EventRunResumed:       14,
	pipeline.EventToolCallParked:   15,
	pipeline.EventDecisionApplied:  16,
	pipeline.EventDecisionRejected: 17,
	pipeline.EventDecisionHeld:     18,
}

// eventTypes are the types of the codes (eventCodes), by code.
var eventTypes = func() []pipeline.EventType {
	out := make([]pipeline.EventType, len(eventCodes)+1)
	for typ, code := range eventCodes {
		if code <= 0 || code >= len(out) || out[code] != "" {
			panic(fmt.Sprintf("store: event code %d of %s is not one of 1 to %d, once", code, typ, len(eventCodes)))
		}
		out[code] = typ
	}
	return out
}()

// newEvent returns the JSON of one event, as a script appends it to its
// run's stream. data is marshalled unless nil; a json.RawMessage is
// checked and taken as it is (not compacted: the store's raw data is
// json.Marshal's output already). A time that unix nanoseconds cannot hold
// (before 1678 or after 2262) is refused.
func newEvent(step int, callID string, typ pipeline.EventType, now time.Time, data any) (string, error) {
	var raw []byte
	switch d := data.(type) {
	case nil:
	case json.RawMessage:
		if !json.Valid(d) {
			return "", fmt.Errorf("event %s data: not JSON: %.40q", typ, d)
		}
		raw = d
	default:
		var err error
		if raw, err = json.Marshal(d); err != nil {
			return "", fmt.Errorf("event %s data: %w", typ, err)
		}
	}
	at := now.UnixNano()
	if !time.Unix(0, at).Equal(now) {
		return "", fmt.Errorf("event %s: its time %s cannot be stored (unix nanoseconds hold 1678 to 2262)", typ, now)
	}
	// A strings.Builder hands its bytes over as the string: no copy.
	var b strings.Builder
	var num [20]byte
	b.Grow(48 + len(typ) + len(callID) + len(raw))
	b.WriteByte('[')
	if code, ok := eventCodes[typ]; ok {
		b.Write(strconv.AppendInt(num[:0], int64(code), 10))
	} else {
		writeJSONString(&b, string(typ))
	}
	b.WriteByte(',')
	b.Write(strconv.AppendInt(num[:0], int64(step), 10))
	b.WriteByte(',')
	writeJSONString(&b, callID)
	b.WriteByte(',')
	b.Write(strconv.AppendInt(num[:0], at, 10))
	if len(raw) > 0 {
		b.WriteByte(',')
		b.Write(raw)
	}
	b.WriteByte(']')
	return b.String(), nil
}

// writeJSONString writes s as a JSON string: as it is between quotes when
// it needs no escaping (our types, and a model's call ids in practice),
// else as json.Marshal writes it.
func writeJSONString(b *strings.Builder, s string) {
	if plainJSON(s) {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	enc, _ := json.Marshal(s) // a string always marshals
	b.Write(enc)
}

// plainJSON reports whether s is written in JSON as it is, between quotes:
// letters, digits and . _ : - only.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// template is an event JSON with one number left out, which only the script
// knows (an attempt count, the run's current step): the script appends
// t[0] .. n .. t[1].
type template [2]string

// holed cuts ev around hole, a piece of JSON that cannot occur inside a JSON
// string (its quotes would be escaped there), so the first match is the
// right one. keep[0] and keep[1] are the parts of hole around the number.
func holed(ev, hole string, keep [2]string) (template, error) {
	before, after, ok := strings.Cut(ev, hole)
	if !ok {
		return template{}, fmt.Errorf("event template: %q not found", hole)
	}
	return template{before + keep[0], keep[1] + after}, nil
}

// stepHoled cuts an event newEvent wrote with step -1 around its step:
// the script appends t[0] .. step .. t[1]. The step is the second element,
// after the type's code: the first ",-1," is the hole (the code is a
// number, and a type stored by its name has no comma).
func stepHoled(ev string) (template, error) {
	return holed(ev, `,-1,`, [2]string{`,`, `,`})
}

// attemptHole is the data of an attempt's event, cut where the script
// puts in the attempt number.
const attemptHole = `{"attempt":0}`

// callAttemptEvents are the two events a call's claim may append (started
// for its first attempt, retried after), with holes for the attempt and
// the step, which the script reads from the call: no read before it.
type callAttemptEvents struct {
	first, retried [3]string // before the step, between step and attempt, after the attempt
}

func newCallAttemptEvents(callID string, now time.Time) (callAttemptEvents, error) {
	ev, err := newEvent(-1, callID, pipeline.EventToolCallStarted, now, json.RawMessage(attemptHole))
	if err != nil {
		return callAttemptEvents{}, err
	}
	step, err := stepHoled(ev)
	if err != nil {
		return callAttemptEvents{}, err
	}
	attempt, err := holed(step[1], attemptHole, [2]string{`{"attempt":`, `}`})
	if err != nil {
		return callAttemptEvents{}, err
	}
	// The two differ only before the step: one event is built, not two.
	return callAttemptEvents{
		first:   [3]string{step[0], attempt[0], attempt[1]},
		retried: [3]string{toolCallRetriedStart, attempt[0], attempt[1]},
	}, nil
}

// toolCallRetriedStart is a tool_call.retried event up to its step, as
// newEvent writes it.
var toolCallRetriedStart = func() string {
	ev, err := newEvent(-1, "", pipeline.EventToolCallRetried, time.Unix(0, 0), nil)
	if err != nil {
		panic(err)
	}
	t, err := stepHoled(ev)
	if err != nil {
		panic(err)
	}
	return t[0]
}()

// addTo adds the templates to c's arguments, first then retried.
func (a callAttemptEvents) addTo(c *script) {
	c.arg(a.first[0], a.first[1], a.first[2], a.retried[0], a.retried[1], a.retried[2])
}

// siblingHole stands for a call id in an event template: it encodes as
// JSON that no call id's encoding contains (a NUL byte, escaped).
const siblingHole = "\x00sibling"

// newSiblingStartedEvent is the tool_call.started event (attempt 1) of a
// call a claim takes with another of its step (claim_call.lua), cut around
// its step and its call id: the script appends
// t[0] .. step .. t[1] .. JSON(id) .. t[2].
func newSiblingStartedEvent(now time.Time) ([3]string, error) {
	ev, err := newEvent(-1, siblingHole, pipeline.EventToolCallStarted, now, json.RawMessage(`{"attempt":1}`))
	if err != nil {
		return [3]string{}, err
	}
	step, err := stepHoled(ev)
	if err != nil {
		return [3]string{}, err
	}
	id, err := holed(step[1], `"\u0000sibling"`, [2]string{})
	if err != nil {
		return [3]string{}, err
	}
	return [3]string{step[0], id[0], id[1]}, nil
}

// holedEvent is an event JSON with holes only the script can fill: the step
// (of the call or the run, read in the script) and optionally one string
// value of the data (a new status, a reason). The script appends
// h[0] .. step .. h[1], or h[0] .. step .. h[1] .. value .. h[2]. Values
// filled in by a script are plain ASCII from a fixed set (statuses and the
// scripts' own reasons), so they need no JSON escaping.
type holedEvent []string

// newHoledEvent builds the event with a step hole and, when key is not "",
// a hole at the data's string field key, which data must marshal as ""
// (`"key":""` cannot occur inside a JSON string, its quotes would be
// escaped there, and the step comes before the data in an event).
func newHoledEvent(callID string, typ pipeline.EventType, now time.Time, data any, key string) (holedEvent, error) {
	ev, err := newEvent(-1, callID, typ, now, data)
	if err != nil {
		return nil, err
	}
	step, err := stepHoled(ev)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return holedEvent{step[0], step[1]}, nil
	}
	value, err := holed(step[1], `"`+key+`":""`, [2]string{`"` + key + `":"`, `"`})
	if err != nil {
		return nil, err
	}
	return holedEvent{step[0], value[0], value[1]}, nil
}

func (h holedEvent) args() []any {
	out := make([]any, len(h))
	for i, p := range h {
		out[i] = p
	}
	return out
}

// Events returns the run's events strictly after afterID ("" = from the
// start), oldest first, at most count of them (count <= 0: all). Each has ID
// set to its stream id, which is what afterID takes to resume. A run with no
// events (or no run) gives an empty slice.
func (s *Store) Events(ctx context.Context, runID, afterID string, count int64) ([]pipeline.Event, error) {
	start := "-"
	if afterID != "" {
		start = "(" + afterID
	}
	var msgs []redis.XMessage
	var err error
	if count > 0 {
		msgs, err = s.rdb.XRangeN(ctx, s.eventsKey(runID), start, "+", count).Result()
	} else {
		msgs, err = s.rdb.XRange(ctx, s.eventsKey(runID), start, "+").Result()
	}
	if err != nil {
		return nil, fmt.Errorf("events of run %s after %q: %w", runID, afterID, err)
	}
	return s.decodeEvents(ctx, runID, msgs)
}

// WaitEvents blocks up to block for events of the run strictly after afterID
// ("" = from the start) and returns those that are there, oldest first. It
// returns an empty slice, and no error, when block passes with nothing new.
// block <= 0 does not block (it is Events without a count).
//
// On cancel of ctx it returns ctx.Err() at once; the blocking read it issued
// then finishes on its own connection within block, so keep block short
// (seconds) when callers may go away.
func (s *Store) WaitEvents(ctx context.Context, runID, afterID string, block time.Duration) ([]pipeline.Event, error) {
	if block <= 0 {
		return s.Events(ctx, runID, afterID, 0)
	}
	if afterID == "" {
		afterID = "0-0"
	}
	if block < time.Millisecond {
		block = time.Millisecond // XREAD BLOCK 0 would mean forever
	}
	type result struct {
		streams []redis.XStream
		err     error
	}
	done := make(chan result, 1)
	go func() {
		// Not ctx: go-redis does not abort a blocking read on cancel, and a
		// cancelled ctx must not poison the pooled connection mid-read.
		streams, err := s.wait.XRead(context.WithoutCancel(ctx), &redis.XReadArgs{
			Streams: []string{s.eventsKey(runID), afterID},
			Block:   block,
		}).Result()
		done <- result{streams, err}
	}()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-done:
		if errors.Is(r.err, redis.Nil) {
			return []pipeline.Event{}, nil
		}
		if r.err != nil {
			return nil, fmt.Errorf("wait for events of run %s after %q: %w", runID, afterID, r.err)
		}
		var msgs []redis.XMessage
		for _, st := range r.streams {
			msgs = append(msgs, st.Messages...)
		}
		return s.decodeEvents(ctx, runID, msgs)
	}
}

// decodeEvents reads the run's stream entries msgs as events, with what
// events keep in their calls read back (incall.go).
func (s *Store) decodeEvents(ctx context.Context, runID string, msgs []redis.XMessage) ([]pipeline.Event, error) {
	out := make([]pipeline.Event, len(msgs))
	refs := make([]string, len(msgs))
	var old []int // TODO(36): goes once every script writes entries
	for i, m := range msgs {
		if raw, ok := m.Values[eventField].(string); ok {
			ev, err := decodeStored(raw)
			if err != nil {
				return nil, fmt.Errorf("decode event %s of run %s: %w", m.ID, runID, err)
			}
			ev.ID, ev.RunID = m.ID, runID
			out[i] = ev
			old = append(old, i)
			continue
		}
		ev, err := decodeEntry(runID, m)
		if err != nil {
			return nil, err
		}
		out[i] = ev
		refs[i], _ = m.Values["ref"].(string)
	}
	if len(old) > 0 {
		olds := make([]pipeline.Event, len(old))
		for j, i := range old {
			olds[j] = out[i]
		}
		if err := s.fillFromCalls(ctx, runID, olds); err != nil {
			return nil, err
		}
		for j, i := range old {
			out[i] = olds[j]
		}
	}
	return out, s.joinRefs(ctx, runID, out, refs)
}

// decodeStored reads an event as a stream entry holds it: the array
// newEvent writes, or the object stores before 2026-11-26 wrote.
func decodeStored(raw string) (pipeline.Event, error) {
	var ev pipeline.Event
	if !strings.HasPrefix(raw, "[") {
		err := json.Unmarshal([]byte(raw), &ev)
		return ev, err
	}
	var parts []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &parts); err != nil {
		return ev, err
	}
	if len(parts) != 4 && len(parts) != 5 {
		return ev, fmt.Errorf("%d fields, not 4 or 5", len(parts))
	}
	var at int64
	if err := errors.Join(decodeType(parts[0], &ev.Type), json.Unmarshal(parts[1], &ev.Step),
		json.Unmarshal(parts[2], &ev.CallID), json.Unmarshal(parts[3], &at)); err != nil {
		return ev, err
	}
	ev.At = time.Unix(0, at).UTC()
	if len(parts) == 5 {
		ev.Data = parts[4]
	}
	return ev, nil
}

// decodeType reads a stored event's type: its code (eventCodes), or its
// name as the stores before 2026-11-27 wrote it.
func decodeType(raw json.RawMessage, typ *pipeline.EventType) error {
	if len(raw) > 0 && raw[0] == '"' {
		return json.Unmarshal(raw, typ)
	}
	code, err := strconv.Atoi(string(raw))
	if err != nil || code <= 0 || code >= len(eventTypes) {
		return fmt.Errorf("event type %.20s is neither a name nor a code", raw)
	}
	*typ = eventTypes[code]
	return nil
}
