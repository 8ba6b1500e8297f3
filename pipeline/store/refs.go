package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// What an event keeps elsewhere, named by its entry's Ref (ADR 0051):
//
//	tool_call.created   ref call     data {status, gate}: the tool, queue,
//	                                 index and arguments are the call's
//	                                 (its orig_args when a decision changed
//	                                 its args)
//	tool_call.finished  ref call     data {status, error}: a terminal call's
//	                                 result is the call's, which no longer
//	                                 changes; a suspended finish keeps its
//	                                 result in the event (the call may run
//	                                 again)
//	tool_call.suspended ref call     data {ticket}: the parking of that
//	                                 ticket is the call's (parkingOf)
//	message.assistant   ref message  data {message_at}: the message is the
//	                                 conversation's, at that index
//
// A tool's result or arguments are often most of what a run holds; kept
// once, they are not also in the events and the conversation.

// joinRefs puts back into evs what they keep elsewhere, refs[i] being the
// Ref of evs[i]'s entry, read in one round trip. What is no longer there
// (the run expiring as it is read) is left out.
func (s *Store) joinRefs(ctx context.Context, runID string, evs []pipeline.Event, refs []string) error {
	if !slices.ContainsFunc(refs, func(r string) bool { return r != "" }) {
		return nil
	}
	reads := make([]redis.Cmder, len(evs))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // each read's error is looked at below
		for i, ev := range evs {
			key := s.callKey(runID, ev.CallID)
			switch {
			case refs[i] == refMessage:
				var at assistantAt
				if err := json.Unmarshal(ev.Data, &at); err != nil {
					return nil
				}
				reads[i] = p.LIndex(ctx, s.msgsKey(runID), int64(at.At))
			case refs[i] != refCall:
				continue
			case ev.Type == pipeline.EventToolCallCreated:
				reads[i] = p.HMGet(ctx, key, "orig_args", "args", "tool", "queue", "idx")
			case ev.Type == pipeline.EventToolCallFinished:
				reads[i] = p.HMGet(ctx, key, "result")
			case ev.Type == pipeline.EventToolCallParked:
				reads[i] = p.HMGet(ctx, key, parkingReads...)
			default:
				continue
			}
		}
		return nil
	})
	for i, read := range reads {
		if read == nil {
			if refs[i] != "" {
				return fmt.Errorf("event %s of run %s: %s keeps nothing in %q", evs[i].ID, runID, evs[i].Type, refs[i])
			}
			continue
		}
		if err := read.Err(); err != nil && !errors.Is(err, redis.Nil) { // nil: no longer there
			return fmt.Errorf("what event %s of run %s keeps elsewhere: %w", evs[i].ID, runID, err)
		}
		data, err := joined(evs[i], read)
		if err != nil {
			return fmt.Errorf("event %s of run %s: %w", evs[i].ID, runID, err)
		}
		evs[i].Data = data
	}
	return nil
}

// joined is ev's data with what read read back from where its entry's Ref
// names.
func joined(ev pipeline.Event, read redis.Cmder) (json.RawMessage, error) {
	var data any
	switch r := read.(type) {
	case *redis.StringCmd:
		if m := r.Val(); m != "" {
			return json.RawMessage(m), nil
		}
		return nil, nil
	case *redis.SliceCmd:
		vals := r.Val()
		switch ev.Type {
		case pipeline.EventToolCallCreated:
			var d createdData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, err
			}
			d.Arguments = firstOf(vals[:2])
			d.Tool, _ = vals[2].(string)
			d.Queue, _ = vals[3].(string)
			idx, _ := vals[4].(string)
			d.Index, _ = strconv.Atoi(idx)
			data = d
		case pipeline.EventToolCallFinished:
			var d finishedData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, err
			}
			d.Result = firstOf(vals)
			data = d
		default: // tool_call.suspended
			var ref parkedRef
			if err := json.Unmarshal(ev.Data, &ref); err != nil {
				return nil, err
			}
			p, err := parkingOf(ref.Ticket, ev.At, vals)
			if err != nil {
				return nil, err
			}
			data = map[string]string{"ticket": ref.Ticket}
			if p != nil {
				data = p
			}
		}
	}
	return json.Marshal(data)
}

// parkedRef is the data of a call's tool_call.suspended event as stored:
// the parking's ticket, the rest being the call's. The call's hash holds
// its parking until the call is parked again, and then keeps it in
// parked_before (finish_call.lua), so the event of every parking finds its
// own, by its ticket and its time (parkingOf).
type parkedRef struct {
	Ticket string `json:"ticket"`
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
// the message is in the conversation, which holds it (ADR 0036).
type assistantAt struct {
	At int `json:"message_at"`
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
