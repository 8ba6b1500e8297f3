package store_test

import (
	"encoding/json"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var keepCases = []contractCase{
	{"a_kept_state_key_is_written_once_and_a_later_writer_gets_it", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		first := store.Keep{Key: "compaction.summary", Value: json.RawMessage(`{"through":4}`),
			Event: pipeline.EventContextCompacted, Data: map[string]int{"through": 4}}
		kept, wrote, err := f.st.KeepState(f.ctx, "r1", 0, "w1", first, at(2))
		if err != nil || !wrote || string(kept) != `{"through":4}` {
			t.Fatalf("first keep: %s %v %v", kept, wrote, err)
		}
		// A writer that read the key unset, as the first did, gets the first's.
		again := first
		again.Value = json.RawMessage(`{"through":5}`)
		f.noEventsFrom(t, "r1", func() {
			kept, wrote, err = f.st.KeepState(f.ctx, "r1", 0, "w1", again, at(3))
		})
		if err != nil || wrote || string(kept) != `{"through":4}` {
			t.Fatalf("second keep: %s %v %v", kept, wrote, err)
		}
		// One that read it is the next writer.
		again.Expect = kept
		if kept, wrote, err = f.st.KeepState(f.ctx, "r1", 0, "w1", again, at(3)); err != nil || !wrote || string(kept) != `{"through":5}` {
			t.Fatalf("third keep: %s %v %v", kept, wrote, err)
		}
		state, err := f.st.RunState(f.ctx, "r1")
		if err != nil || string(state["compaction.summary"]) != `{"through":5}` {
			t.Fatalf("state %v, %v", state, err)
		}
		evs := f.events(t, "r1")
		if last := evs[len(evs)-1]; last.Type != pipeline.EventContextCompacted || last.Step != 0 {
			t.Fatalf("last event %+v", last)
		}
		wantTypes(t, typesOf(evs)[len(evs)-2:], pipeline.EventContextCompacted, pipeline.EventContextCompacted)
	}},
	{"a_state_key_is_kept_only_by_the_owner_of_the_step", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		k := store.Keep{Key: "compaction.summary", Value: json.RawMessage(`{}`), Event: pipeline.EventContextCompacted}
		f.noEventsFrom(t, "r1", func() {
			_, _, err := f.st.KeepState(f.ctx, "r1", 0, "w2", k, at(2))
			wantErr(t, err, store.ErrLeaseLost)
			_, _, err = f.st.KeepState(f.ctx, "r1", 1, "w1", k, at(2))
			wantErr(t, err, store.ErrLeaseLost)
		})
		_, _, err := f.st.KeepState(f.ctx, "nope", 0, "w1", k, at(2))
		wantErr(t, err, store.ErrNotFound)
		_, _, err = f.st.KeepState(f.ctx, "r1", 0, "w1", store.Keep{Key: "x"}, at(2))
		wantErr(t, err, store.ErrInvalid)
	}},
}
