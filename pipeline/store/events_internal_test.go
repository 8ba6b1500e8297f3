package store

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// asStored is e as its stream holds it: the six fields emit writes.
func asStored(id string, e entry) redis.XMessage {
	return redis.XMessage{ID: id, Values: map[string]any{
		"type": string(e.Type), "step": strconv.Itoa(e.Step), "call": e.Call,
		"at": strconv.FormatInt(e.At, 10), "data": e.Data, "ref": e.Ref,
	}}
}

func TestNewEntry_is_read_back_as_the_event_written(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_123).UTC()
	cases := []struct {
		name   string
		step   int
		call   string
		typ    pipeline.EventType
		data   any
		stored string
	}{
		{"no data", 0, "", pipeline.EventRunStarted, nil, ""},
		{"a struct", 3, "c1", pipeline.EventToolCallFinished, finishedData{Status: pipeline.CallFailed, Error: "boom"}, `{"status":"failed","error":"boom"}`},
		{"raw JSON as it is", 1, "call \"odd\"", pipeline.EventTextDelta, json.RawMessage(`{"text": "hi"}`), `{"text": "hi"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := newEntry(c.step, c.call, c.typ, now, c.data)
			if err != nil {
				t.Fatalf("newEntry: %v", err)
			}
			if e.Data != c.stored {
				t.Fatalf("data stored as %q, want %q", e.Data, c.stored)
			}
			ev, err := decodeEntry("r1", asStored("1-1", e))
			if err != nil {
				t.Fatalf("decodeEntry: %v", err)
			}
			if ev.ID != "1-1" || ev.RunID != "r1" || ev.Type != c.typ || ev.Step != c.step || ev.CallID != c.call ||
				!ev.At.Equal(now) || string(ev.Data) != c.stored {
				t.Fatalf("read back as %+v", ev)
			}
		})
	}
}

func TestNewEntry_refuses_data_that_is_not_JSON(t *testing.T) {
	if _, err := newEntry(0, "", pipeline.EventRunStarted, time.Now(), json.RawMessage(`{"a":`)); err == nil {
		t.Fatal("newEntry took data that is not JSON")
	}
	if _, err := newEntry(0, "", pipeline.EventRunStarted, time.Now(), func() {}); err == nil {
		t.Fatal("newEntry took data that does not marshal")
	}
}

func TestDecodeEntry_refuses_an_entry_it_cannot_read(t *testing.T) {
	good, err := newEntry(2, "c1", pipeline.EventStepStarted, time.UnixMilli(5), json.RawMessage(`{"attempt":1}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, spoil := range map[string]func(map[string]any){
		"no type":             func(v map[string]any) { delete(v, "type") },
		"a step not a number": func(v map[string]any) { v["step"] = "two" },
		"a time not a number": func(v map[string]any) { v["at"] = "2026-11-28T00:00:00Z" },
		"the earlier array":   func(v map[string]any) { clear(v); v["e"] = `[3,2,"c1",5000000,{"attempt":1}]` },
	} {
		m := asStored("1-1", good)
		spoil(m.Values)
		if ev, err := decodeEntry("r1", m); err == nil {
			t.Errorf("%s: read as %+v", name, ev)
		}
	}
}
