package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// newEvent writes by hand what json.Marshal of a storedEvent writes; for
// every kind of input the two must be the same bytes.
func TestNewEvent_writes_what_json_Marshal_writes(t *testing.T) {
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
		{1, "call_é", pipeline.EventTextDelta, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "text"},
	}
	for _, c := range cases {
		got, err := newEvent(c.step, c.callID, c.typ, c.now, c.data)
		if err != nil {
			t.Fatalf("newEvent(%+v): %v", c, err)
		}
		ev := storedEvent{Type: c.typ, Step: c.step, CallID: c.callID, At: c.now.UTC()}
		if c.data != nil {
			ev.Data, _ = json.Marshal(c.data)
		}
		want, _ := json.Marshal(ev)
		if got != string(want) {
			t.Errorf("newEvent(%+v)\n got %s\nwant %s", c, got, want)
		}
	}
	if _, err := newEvent(0, "", pipeline.EventStepStarted, at, json.RawMessage(`{"attempt":`)); err == nil {
		t.Error("newEvent took data that is not JSON")
	}
	if ev, err := newEvent(0, "", pipeline.EventStepStarted, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), nil); err == nil {
		t.Errorf("newEvent wrote a time JSON cannot hold: %s", ev)
	}
}
