package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// maxInline is the largest result or arguments a call's events keep
// themselves (ADR 0030, 0037). Larger ones are kept once, in the call's
// hash, which is written with the event and lives as long: a tool's result
// or arguments are often most of what a run holds (a page, a file, a
// lookup's answer), and the call, its events and the conversation each held
// them. At 32 bytes or less the mark that stands for them
// ("result_in_call":true) is about as long as they are.
const maxInline = 32

// finishedOf is the data of a call's tool_call.finished event as stored: a
// big result of a terminal call left to the call, whose result then does
// not change (a call that parks may run again and finish with another).
func finishedOf(status pipeline.ToolCallStatus, result json.RawMessage, errText string) finishedData {
	if len(result) > maxInline && status.Terminal() {
		return finishedData{Status: status, Error: errText, InCall: true}
	}
	return finishedData{Status: status, Result: result, Error: errText}
}

// parkedRef is the data of a call's tool_call.suspended event as stored:
// the parking with only its ticket, the rest being the call's. The call's
// hash holds its parking until the call is parked again, and then keeps it
// in parked_before (finish_call.lua), so the event of every parking finds
// its own, by its ticket and its time (parkingOf). The parking was the
// event's whole data before 2026-11-27 (about 300 bytes, all of them in the
// hash as well); such an event, which has a resume mode, reads as it is.
type parkedRef struct {
	Ticket     string              `json:"ticket"`
	ResumeMode pipeline.ResumeMode `json:"resume_mode,omitempty"` // a whole parking's, never empty
}

// parkedOf is the data of the tool_call.suspended event of a parking.
func parkedOf(p pipeline.Parking) parkedRef { return parkedRef{Ticket: p.Ticket} }

// parkingReads are the fields of a call's hash a tool_call.suspended event
// is filled from: its parking (parkingFields) and the earlier ones.
var parkingReads = func() []string {
	var names []string
	for i, f := range parkingFields(pipeline.Parking{}) {
		if i%2 == 0 {
			names = append(names, f.(string))
		}
	}
	return append(names, "parked_before")
}()

// parkingOf finds the parking of a tool_call.suspended event of ticket at
// time at in vals, the call's parkingReads as read: of the call's parkings
// (the earlier ones, a list of field, value lists, oldest first, then its
// own) the latest with that ticket that began by at. A tool may give the
// same ticket again; a parking begins at its event or before (parkAt). It
// is nil when there is none (the call gone as the run expires).
func parkingOf(ticket string, at time.Time, vals []any) (*pipeline.Parking, error) {
	own := make(pairsFields, 0, 2*len(parkingReads))
	for i, f := range parkingReads[:len(parkingReads)-1] {
		v, _ := vals[i].(string)
		own = append(own, f, v)
	}
	all := []pairsFields{own}
	if before, _ := vals[len(vals)-1].(string); before != "" {
		var earlier [][]string
		if err := json.Unmarshal([]byte(before), &earlier); err != nil {
			return nil, fmt.Errorf("parked_before: %w", err)
		}
		for _, e := range slices.Backward(earlier) {
			h := make(pairsFields, len(e)&^1)
			for i := range h {
				h[i] = e[i]
			}
			all = append(all, h)
		}
	}
	for _, h := range all {
		d := fieldDecoder{h: h}
		if p := d.parking(); p != nil && p.Ticket == ticket && !p.ParkedAt.After(at) {
			return p, d.err
		}
	}
	return nil, nil
}

// assistantAt is the data of a message.assistant event as stored: where
// the message is in the conversation, which holds it (ADR 0036; before it,
// a message of 512 bytes or less was kept in the event as well).
type assistantAt struct {
	At int `json:"message_at"`
}

// fillFromCalls puts back into evs, the run's events as stored, what they
// keep elsewhere: in their calls (results, arguments, parkings) or in the
// conversation (an assistant message), read in one round trip. What is no
// longer there (the run expiring as it is read) is left out.
func (s *Store) fillFromCalls(ctx context.Context, runID string, evs []pipeline.Event) error {
	type fill struct {
		at       int
		finished *finishedData
		created  *createdData
		message  *assistantAt
		parked   *parkedRef
		read     *redis.SliceCmd
		msg      *redis.StringCmd
	}
	var fills []fill
	for i, ev := range evs {
		f := fill{at: i}
		var err error
		switch {
		case ev.Type == pipeline.EventToolCallFinished && strings.Contains(string(ev.Data), `"result_in_call":true`):
			f.finished, err = storedData[finishedData](ev, runID)
		case ev.Type == pipeline.EventToolCallCreated:
			f.created, err = storedData[createdData](ev, runID)
		case ev.Type == pipeline.EventAssistantMessage && strings.HasPrefix(string(ev.Data), `{"message_at":`):
			f.message, err = storedData[assistantAt](ev, runID)
		case ev.Type == pipeline.EventToolCallParked:
			f.parked, err = storedData[parkedRef](ev, runID)
		default:
			continue
		}
		if err != nil {
			return err
		}
		// The text found may be in the arguments or the result themselves:
		// only the event's own mark counts.
		if (f.finished != nil && f.finished.InCall) || (f.created != nil && (f.created.InCall || f.created.Tool == "")) || f.message != nil ||
			(f.parked != nil && f.parked.ResumeMode == "") {
			fills = append(fills, f)
		}
	}
	if len(fills) == 0 {
		return nil
	}
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // each read's error is looked at below
		for i, f := range fills {
			key := s.callKey(runID, evs[f.at].CallID)
			switch {
			case f.finished != nil:
				fills[i].read = p.HMGet(ctx, key, "result")
			case f.created != nil:
				fills[i].read = p.HMGet(ctx, key, "orig_args", "args", "tool", "queue", "idx")
			case f.parked != nil:
				fills[i].read = p.HMGet(ctx, key, parkingReads...)
			default:
				fills[i].msg = p.LIndex(ctx, s.msgsKey(runID), int64(f.message.At))
			}
		}
		return nil
	})
	for _, f := range fills {
		var read redis.Cmder = f.msg
		if f.read != nil {
			read = f.read
		}
		if err := read.Err(); err != nil && !errors.Is(err, redis.Nil) { // nil: no longer there
			return fmt.Errorf("what event %s of run %s keeps elsewhere: %w", evs[f.at].ID, runID, err)
		}
		var data any
		switch {
		case f.finished != nil:
			f.finished.InCall, f.finished.Result = false, firstOf(f.read.Val())
			data = f.finished
		case f.created != nil:
			vals := f.read.Val()
			if f.created.InCall {
				f.created.InCall, f.created.Arguments = false, firstOf(vals[:2])
			}
			if f.created.Tool == "" {
				f.created.Tool, _ = vals[2].(string)
				f.created.Queue, _ = vals[3].(string)
				idx, _ := vals[4].(string)
				f.created.Index, _ = strconv.Atoi(idx)
			}
			data = f.created
		case f.parked != nil:
			p, err := parkingOf(f.parked.Ticket, evs[f.at].At, f.read.Val())
			if err != nil {
				return fmt.Errorf("event %s of run %s: %w", evs[f.at].ID, runID, err)
			}
			data = map[string]string{"ticket": f.parked.Ticket}
			if p != nil {
				data = p
			}
		default:
			data = json.RawMessage(nil)
			if m := f.msg.Val(); m != "" {
				data = json.RawMessage(m)
			}
		}
		b, err := json.Marshal(data)
		if err != nil {
			return fmt.Errorf("event %s of run %s: %w", evs[f.at].ID, runID, err)
		}
		evs[f.at].Data = b
	}
	return nil
}

// storedData decodes the data of ev, an event of runID as stored.
func storedData[T any](ev pipeline.Event, runID string) (*T, error) {
	d := new(T)
	if err := json.Unmarshal(ev.Data, d); err != nil {
		return nil, fmt.Errorf("decode event %s of run %s: %w", ev.ID, runID, err)
	}
	return d, nil
}

// firstOf is the first non-empty value of an HMGET reply, as raw JSON
// (nil when there is none).
func firstOf(vals []any) json.RawMessage {
	for _, v := range vals {
		if s, _ := v.(string); s != "" {
			return json.RawMessage(s)
		}
	}
	return nil
}
