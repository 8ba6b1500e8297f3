package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// createdOf is the data of a call's tool_call.created event as stored: big
// arguments left to the call (whose orig_args keeps them when a decision
// changes its args).
func createdOf(d createdData) createdData {
	if len(d.Arguments) > maxInline {
		d.Arguments, d.InCall = nil, true
	}
	return d
}

// assistantAt is the data of a message.assistant event as stored: where
// the message is in the conversation, which holds it (ADR 0036; before it,
// a message of 512 bytes or less was kept in the event as well).
type assistantAt struct {
	At int `json:"message_at"`
}

// assistantEvent is the message.assistant event of an assistant message at
// step, as commit_step.lua writes it: a template, the event of assistantAt
// cut around its index by a NUL byte (which JSON never holds), for the
// script to put in the index its RPUSH gives the message. The message
// itself goes to the conversation alone, whatever its size.
func assistantEvent(step int, now time.Time) (string, error) {
	ev, err := newEvent(step, "", pipeline.EventAssistantMessage, now, assistantAt{})
	if err != nil {
		return "", err
	}
	t, err := holed(ev, `"message_at":0`, [2]string{`"message_at":`, ""})
	if err != nil {
		return "", err
	}
	return t[0] + "\x00" + t[1], nil
}

// fillFromCalls puts back into evs, the run's events as stored, what they
// keep elsewhere: in their calls (results, arguments) or in the
// conversation (an assistant message), read in one round trip. What is no
// longer there (the run expiring as it is read) is left out.
func (s *Store) fillFromCalls(ctx context.Context, runID string, evs []pipeline.Event) error {
	type fill struct {
		at       int
		finished *finishedData
		created  *createdData
		message  *assistantAt
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
		case ev.Type == pipeline.EventToolCallCreated && strings.Contains(string(ev.Data), `"arguments_in_call":true`):
			f.created, err = storedData[createdData](ev, runID)
		case ev.Type == pipeline.EventAssistantMessage && strings.HasPrefix(string(ev.Data), `{"message_at":`):
			f.message, err = storedData[assistantAt](ev, runID)
		default:
			continue
		}
		if err != nil {
			return err
		}
		// The text found may be in the arguments or the result themselves:
		// only the event's own mark counts.
		if (f.finished != nil && f.finished.InCall) || (f.created != nil && f.created.InCall) || f.message != nil {
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
				fills[i].read = p.HMGet(ctx, key, "orig_args", "args")
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
			f.created.InCall, f.created.Arguments = false, firstOf(f.read.Val())
			data = f.created
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
