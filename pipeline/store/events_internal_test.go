package store

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stepwise-run/stepwise/pipeline"
)

// newEvent writes the array decodeStored reads back as the same event, for
// every kind of input: ids and types that need escaping, data of any kind,
// times in any zone, to the nanosecond.
func TestNewEvent_is_read_back_as_written(t *testing.T) {
	at := time.Date(2026, 11, 25, 23, 9, 3, 483135576, time.UTC)
	cases := []struct {
		step   int
		callID string
		typ    pipeline.EventType
		now    time.Time
		data   any
	}{
		{0, "", pipeline.EventRunStarted, at, nil},
		{-1, "call_0_0", pipeline.EventToolCallFinished, at, map[string]any{"status": "succeeded", "result": json.RawMessage(`{"n":1}`)}},
		{12, "c1", pipeline.EventStepStarted, at.Truncate(time.Second), json.RawMessage(`{"attempt":0}`)},
		{3, `call "<a&b>"`, pipeline.EventToolCallCreated, at.In(time.FixedZone("x", 3600)), struct{ A string }{"<é>"}},
		{1, "call_é\x00,-1,", pipeline.EventTextDelta, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "text"},
	}
	for _, c := range cases {
		raw, err := newEvent(c.step, c.callID, c.typ, c.now, c.data)
		if err != nil {
			t.Fatalf("newEvent(%+v): %v", c, err)
		}
		got, err := decodeStored(raw)
		if err != nil {
			t.Fatalf("decodeStored(%s): %v", raw, err)
		}
		var data json.RawMessage
		if c.data != nil {
			data, _ = json.Marshal(c.data)
		}
		if got.Type != c.typ || got.Step != c.step || got.CallID != c.callID || !got.At.Equal(c.now) || got.At.Location() != time.UTC ||
			string(got.Data) != string(data) {
			t.Errorf("newEvent(%+v) = %s, read back as %+v", c, raw, got)
		}
	}
	plain, _ := newEvent(2, "c1", pipeline.EventToolCallStarted, at, json.RawMessage(`{"attempt":1}`))
	if want := `[7,2,"c1",1795648143483135576,{"attempt":1}]`; plain != want {
		t.Errorf("newEvent = %s, want %s", plain, want)
	}
	if _, err := newEvent(0, "", pipeline.EventStepStarted, at, json.RawMessage(`{"attempt":`)); err == nil {
		t.Error("newEvent took data that is not JSON")
	}
	if ev, err := newEvent(0, "", pipeline.EventStepStarted, time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC), nil); err == nil {
		t.Errorf("newEvent wrote a time unix nanoseconds cannot hold: %s", ev)
	}
}

// The events of the stores before 2026-11-26, objects, are still read, and
// their deltas still trimmed: a run goes on across the upgrade.
func TestDecodeStored_reads_the_objects_of_earlier_stores(t *testing.T) {
	old := `{"type":"tool_call.finished","step":3,"call_id":"c1","at":"2026-11-25T23:09:03.483135576Z","data":{"status":"succeeded"}}`
	ev, err := decodeStored(old)
	want := time.Date(2026, 11, 25, 23, 9, 3, 483135576, time.UTC)
	if err != nil || ev.Type != pipeline.EventToolCallFinished || ev.Step != 3 || ev.CallID != "c1" || !ev.At.Equal(want) ||
		string(ev.Data) != `{"status":"succeeded"}` {
		t.Fatalf("decodeStored(%s) = %+v, %v", old, ev, err)
	}
	for _, bad := range []string{`[]`, `["run.started",0,"",1,{},2]`, `["run.started","0","",1]`, `[`, `{`,
		`[0,0,"",1]`, `[19,0,"",1]`, `[1.5,0,"",1]`, `[-1,0,"",1]`, `[null,0,"",1]`} {
		if _, err := decodeStored(bad); err == nil {
			t.Errorf("decodeStored(%s) took it", bad)
		}
	}
}

// The arrays of the stores from 2026-11-26 to 2026-11-27, which named the
// type, are still read, and their deltas still trimmed; every type has a
// code of its own, which reads back as the type.
func TestDecodeStored_reads_the_types_by_name_and_by_code(t *testing.T) {
	named := `["tool_call.finished",3,"c1",1795648143483135576,{"status":"succeeded"}]`
	ev, err := decodeStored(named)
	if err != nil || ev.Type != pipeline.EventToolCallFinished || ev.Step != 3 || ev.CallID != "c1" {
		t.Fatalf("decodeStored(%s) = %+v, %v", named, ev, err)
	}
	types := []pipeline.EventType{pipeline.EventRunCreated, pipeline.EventRunStarted, pipeline.EventStepStarted,
		pipeline.EventAssistantMessage, pipeline.EventTextDelta, pipeline.EventToolCallCreated, pipeline.EventToolCallStarted,
		pipeline.EventToolCallFinished, pipeline.EventStepEnded, pipeline.EventStepRetried, pipeline.EventStepDeferred,
		pipeline.EventToolCallRetried, pipeline.EventRunFinished, pipeline.EventRunResumed, pipeline.EventToolCallParked,
		pipeline.EventDecisionApplied, pipeline.EventDecisionRejected, pipeline.EventDecisionHeld}
	if len(types) != len(eventCodes) {
		t.Fatalf("%d types have codes, %d are listed here", len(eventCodes), len(types))
	}
	for _, typ := range types {
		raw, err := newEvent(1, "", typ, time.Unix(0, 0), nil)
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := decodeStored(raw); err != nil || ev.Type != typ || strings.Contains(raw, string(typ)) {
			t.Errorf("%s stored as %s, read back as %q, %v", typ, raw, ev.Type, err)
		}
	}
	// A type without a code (a later store's, read by this one) is its name.
	raw, err := newEvent(1, "", "run.paused", time.Unix(0, 0), nil)
	if ev, _ := decodeStored(raw); err != nil || ev.Type != "run.paused" || !strings.HasPrefix(raw, `["run.paused",`) {
		t.Errorf("a type without a code stored as %s, read back as %q, %v", raw, ev.Type, err)
	}
}

// The templates scripts fill in are events once filled, whatever the call
// id: the step hole, the sibling's id hole and the attempt hole.
func TestEventTemplates_filled_in_are_events(t *testing.T) {
	at := time.Date(2026, 11, 25, 23, 9, 3, 483135576, time.UTC)
	check := func(raw string, typ pipeline.EventType, step int, callID, data string) {
		t.Helper()
		ev, err := decodeStored(raw)
		if err != nil || ev.Type != typ || ev.Step != step || ev.CallID != callID || !ev.At.Equal(at) || string(ev.Data) != data {
			t.Errorf("%s read as %+v, %v", raw, ev, err)
		}
	}
	for _, id := range []string{"c1", `call ",-1, "`} {
		a, err := newCallAttemptEvents(id, at)
		if err != nil {
			t.Fatal(err)
		}
		check(a.first[0]+"7"+a.first[1]+"1"+a.first[2], pipeline.EventToolCallStarted, 7, id, `{"attempt":1}`)
		check(a.retried[0]+"7"+a.retried[1]+"3"+a.retried[2], pipeline.EventToolCallRetried, 7, id, `{"attempt":3}`)
		s, err := newSiblingStartedEvent(at)
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := json.Marshal(id)
		check(s[0]+"4"+s[1]+string(enc)+s[2], pipeline.EventToolCallStarted, 4, id, `{"attempt":1}`)
		h, err := newHoledEvent(id, pipeline.EventToolCallFinished, at, map[string]string{"status": ""}, "status")
		if err != nil {
			t.Fatal(err)
		}
		check(h[0]+"5"+h[1]+"failed"+h[2], pipeline.EventToolCallFinished, 5, id, `{"status":"failed"}`)
	}
}

// Any event newEvent writes is read back as written, and the sibling's
// template filled with any call id is that call's event: call ids come
// from models, so they may hold anything.
func FuzzNewEvent(f *testing.F) {
	f.Add(2, "c1", "tool_call.started", int64(1795648143483135576), []byte(`{"attempt":1}`))
	f.Add(-1, `",-1,"\u0000`, `message.delta`, int64(0), []byte(`"text"`))
	f.Add(0, "", "run.created", int64(-1), []byte{})
	f.Fuzz(func(t *testing.T, step int, callID, typ string, ns int64, data []byte) {
		if !utf8.ValidString(callID) || !utf8.ValidString(typ) {
			t.Skip("JSON strings hold UTF-8; json.Marshal replaces what is not")
		}
		now := time.Unix(0, ns)
		var d any
		if len(data) > 0 {
			if !json.Valid(data) {
				t.Skip()
			}
			d = json.RawMessage(data)
		}
		raw, err := newEvent(step, callID, pipeline.EventType(typ), now, d)
		if err != nil {
			t.Fatalf("newEvent: %v", err)
		}
		ev, err := decodeStored(raw)
		if err != nil {
			t.Fatalf("decodeStored(%s): %v", raw, err)
		}
		// The data is taken as it is; as a value of the array it is read
		// without the blanks around it.
		if string(ev.Type) != typ || ev.Step != step || ev.CallID != callID || !ev.At.Equal(now) || string(ev.Data) != string(bytes.TrimSpace(data)) {
			t.Fatalf("%s read back as %+v", raw, ev)
		}
		s, err := newSiblingStartedEvent(now)
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := json.Marshal(callID)
		filled := s[0] + strconv.Itoa(step) + s[1] + string(enc) + s[2]
		if ev, err := decodeStored(filled); err != nil || ev.CallID != callID || ev.Step != step || string(ev.Data) != `{"attempt":1}` {
			t.Fatalf("the sibling's template filled: %s read as %+v, %v", filled, ev, err)
		}
	})
}
