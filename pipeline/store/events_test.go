package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var eventCases = []contractCase{
	{"big_arguments_are_kept_once_in_their_call_and_the_event_reads_the_first_ones", func(t *testing.T, f *fixture) {
		big := `{"text":"` + strings.Repeat("y", 600) + `"}`
		f.claimed(t, "r1")
		c := suspendedCommit(pipeline.ResumePassDecisionToTool, "c1", "c2", "c3")
		c.Calls[0].Arguments, c.Assistant.ToolCalls[0].Arguments = json.RawMessage(big), json.RawMessage(big)
		mark := json.RawMessage(`{"arguments_in_call":true}`) // arguments that read like the mark, kept in the event
		c.Calls[2].Arguments, c.Assistant.ToolCalls[2].Arguments = mark, mark
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2)); err != nil {
			t.Fatal(err)
		}
		// The message that proposes them is in the conversation, at index 1.
		if s := f.stored(t, "r1", pipeline.EventAssistantMessage); len(s) != 1 || s[0] != `message {"message_at":1}` {
			t.Fatalf("message.assistant as stored = %.300q; want where the message is", s)
		}
		stored := f.stored(t, "r1", pipeline.EventToolCallCreated)
		if created := `call {"status":"suspended","gate":"suspend"}`; !slices.Equal(stored, []string{created, created, created}) {
			t.Fatalf("tool_call.created as stored = %.300q; want the arguments, big or small, in the call", stored)
		}
		// A decision that gives the tool other arguments leaves the event
		// with the ones the call was created with.
		d := resume("d1", "c1")
		d.Payload = json.RawMessage(`{"text":"shorter"}`)
		if r := f.decide(t, "r1", d, at(3)); r.Outcome != store.DecisionApplied {
			t.Fatalf("decision = %+v", r)
		}
		var created []string
		for _, ev := range f.events(t, "r1") {
			switch ev.Type {
			case pipeline.EventToolCallCreated:
				created = append(created, string(ev.Data))
			case pipeline.EventAssistantMessage:
				want, err := json.Marshal(c.Assistant)
				if err != nil || string(ev.Data) != string(want) {
					t.Fatalf("message.assistant as read = %.300s, want %.300s (%v)", ev.Data, want, err)
				}
			}
		}
		want := []string{
			`{"tool":"echo","queue":"default","index":0,"arguments":` + big + `,"status":"suspended","gate":"suspend"}`,
			`{"tool":"echo","queue":"default","index":1,"arguments":{"n":1},"status":"suspended","gate":"suspend"}`,
			`{"tool":"echo","queue":"default","index":2,"arguments":{"arguments_in_call":true},"status":"suspended","gate":"suspend"}`,
		}
		if !slices.Equal(created, want) {
			t.Fatalf("tool_call.created as read = %.300q, want %.300q", created, want)
		}
	}},
	{"every_assistant_message_is_kept_once_in_the_conversation_and_read_back_into_its_event", func(t *testing.T, f *fixture) {
		// However small (ADR 0036): the event holds where the message is.
		f.committed(t, "r1", "c1")
		stored := f.stored(t, "r1", pipeline.EventAssistantMessage)
		if len(stored) != 1 || stored[0] != `message {"message_at":1}` {
			t.Fatalf("message.assistant as stored = %q; want where the message is, not the message", stored)
		}
		want, err := json.Marshal(commitOf("c1").Assistant)
		if err != nil {
			t.Fatal(err)
		}
		var read []string
		for _, ev := range f.events(t, "r1") {
			if ev.Type == pipeline.EventAssistantMessage {
				read = append(read, string(ev.Data))
			}
		}
		if len(read) != 1 || read[0] != string(want) {
			t.Fatalf("message.assistant as read = %q, want %s", read, want)
		}
	}},
	{"a_big_result_is_kept_once_in_its_call_and_read_back_into_its_event", func(t *testing.T, f *fixture) {
		big := `"` + strings.Repeat("x", 600) + `"`
		f.committed(t, "r1", "c1", "c2", "c3")
		f.finish(t, "r1", "c1", "t1", store.CallOutcome{Status: pipeline.CallSucceeded, Result: json.RawMessage(big)})
		f.finish(t, "r1", "c2", "t1", store.CallOutcome{Status: pipeline.CallSucceeded, Result: json.RawMessage(`{"ok":true}`)})
		// A call that parks may run again and finish with another result: its
		// event keeps what it had, however big.
		f.finish(t, "r1", "c3", "t1", store.CallOutcome{Status: pipeline.CallSuspended, Result: json.RawMessage(big),
			Parking: parking(pipeline.ResumeReplay)})
		// As stored: the small result in its event, the big one of a
		// terminal call only in its call.
		stored := f.stored(t, "r1", pipeline.EventToolCallFinished)
		if len(stored) != 3 || stored[0] != `call {"status":"succeeded"}` || stored[1] != `call {"status":"succeeded"}` ||
			!strings.HasSuffix(stored[2], `"result":`+big+`}`) {
			t.Fatalf("tool_call.finished as stored = %.300q; want the results of the terminal calls in the calls, the parked one's in its event", stored)
		}
		// As read, by both reads: each event whole, as if it held it.
		want := []string{`c1 {"status":"succeeded","result":` + big + `}`, `c2 {"status":"succeeded","result":{"ok":true}}`,
			`c3 {"status":"suspended","result":` + big + `}`}
		for _, finished := range f.readBoth(t, "r1", pipeline.EventToolCallFinished) {
			if !slices.Equal(finished, want) {
				t.Fatalf("tool_call.finished as read = %.200q, want %.200q", finished, want)
			}
		}
	}},
	{"a_created_event_keeps_how_its_call_began_and_reads_the_rest_from_the_call", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		c := commitOf("c1", "c2")
		c.Calls[1].Queue, c.Calls[1].Gate, c.Calls[1].Arguments = "slow", pipeline.GateAllow, nil
		if _, _, err := f.st.CommitStep(f.ctx, "r1", 0, "w1", c, at(2)); err != nil {
			t.Fatal(err)
		}
		stored := f.stored(t, "r1", pipeline.EventToolCallCreated)
		if !slices.Equal(stored, []string{`call {"status":"new"}`, `call {"status":"new","gate":"allow"}`}) {
			t.Fatalf("tool_call.created as stored = %q; want no tool, queue, index or arguments", stored)
		}
		want := []string{`c1 {"tool":"echo","queue":"default","index":0,"arguments":{"n":0},"status":"new"}`,
			`c2 {"tool":"echo","queue":"slow","index":1,"arguments":null,"status":"new","gate":"allow"}`}
		for _, read := range f.readBoth(t, "r1", pipeline.EventToolCallCreated) {
			if !slices.Equal(read, want) {
				t.Fatalf("tool_call.created as read = %q, want %q", read, want)
			}
		}
	}},
	{"each_parking_of_a_call_is_kept_in_its_call_and_read_back_into_its_event", func(t *testing.T, f *fixture) {
		// Parked by its gate at the commit, then twice more by its tool after
		// a decision to replay it; the last time with the first's ticket.
		f.parked(t, "r1", pipeline.ResumeReplay, at(2), "c1")
		hash, err := pipeline.ArgsHash(commitOf("c1").Calls[0].Arguments)
		if err != nil {
			t.Fatal(err)
		}
		first := *parking(pipeline.ResumeReplay)
		first.Ticket, first.ArgsHash, first.ParkedAt = "tk-c1", hash, at(2)
		second := pipeline.Parking{Ticket: "tk-2", Reason: "over the limit", ArgsHash: hash,
			ResumeMode: pipeline.ResumeReplay, OnTimeout: "cancel", Deadline: at(700), ParkedAt: at(5)}
		third := pipeline.Parking{Ticket: "tk-c1", Reason: "once more", ArgsHash: hash,
			ResumeMode: pipeline.ResumeReplay, Deadline: at(900), OnTimeout: "resume", ParkedAt: at(8)}
		for i, p := range []pipeline.Parking{second, third} {
			now := at(3 + 3*i)
			f.decide(t, "r1", resume(fmt.Sprintf("d%d", i), "c1"), now)
			if _, err := f.st.ClaimCall(f.ctx, "r1", "c1", lease("t1", at(60)), at(4+3*i)); err != nil {
				t.Fatal(err)
			}
			given := p
			given.ArgsHash, given.ParkedAt = "", time.Time{} // the store completes them
			if _, err := f.st.FinishCall(f.ctx, "r1", "c1", "t1",
				store.CallOutcome{Status: pipeline.CallSuspended, Parking: &given}, at(5+3*i)); err != nil {
				t.Fatal(err)
			}
		}
		stored := f.stored(t, "r1", pipeline.EventToolCallParked)
		if len(stored) != 3 {
			t.Fatalf("tool_call.suspended as stored = %q", stored)
		}
		for i, ticket := range []string{"tk-c1", "tk-2", "tk-c1"} {
			if !strings.Contains(stored[i], `{"ticket":"`+ticket+`"}`) {
				t.Errorf("tool_call.suspended %d as stored = %s; want its ticket, the rest in the call", i, stored[i])
			}
		}
		want := []string{}
		for _, p := range []pipeline.Parking{first, second, third} {
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, string(b))
		}
		for _, read := range f.readBoth(t, "r1", pipeline.EventToolCallParked) {
			for i := range read {
				read[i] = strings.TrimPrefix(read[i], "c1 ")
			}
			if !slices.Equal(read, want) {
				t.Fatalf("tool_call.suspended as read:\n%s\nwant:\n%s", strings.Join(read, "\n"), strings.Join(want, "\n"))
			}
		}
		// The call's own parking is its last.
		call, err := f.st.GetCall(f.ctx, "r1", "c1")
		if err != nil || call.Parking == nil || *call.Parking != third {
			t.Fatalf("GetCall = %+v, %v", call.Parking, err)
		}
	}},
	{"a_run_logs_each_transition_once_in_order", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1")
		f.done(t, "r1", "c1")
		if _, _, err := f.st.EndStep(f.ctx, "r1", 0, store.StepEnd{
			Finish: &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd},
		}, at(5)); err != nil {
			t.Fatal(err)
		}
		evs := f.events(t, "r1")
		wantTypes(t, typesOf(evs),
			pipeline.EventRunCreated, pipeline.EventRunStarted, pipeline.EventStepStarted,
			pipeline.EventAssistantMessage, pipeline.EventToolCallCreated,
			pipeline.EventToolCallStarted, pipeline.EventToolCallFinished,
			pipeline.EventStepEnded, pipeline.EventRunFinished)
		wantAt := []time.Time{t0, at(1), at(1), at(2), at(2), at(3), at(4), at(5), at(5)}
		for i, ev := range evs {
			if ev.RunID != "r1" || ev.Step != 0 || !ev.At.Equal(wantAt[i]) {
				t.Fatalf("event %d = %+v", i, ev)
			}
			if i > 0 && !idBefore(evs[i-1].ID, ev.ID) {
				t.Fatalf("event ids out of order: %s then %s", evs[i-1].ID, ev.ID)
			}
		}
	}},
	{"events_resume_strictly_after_an_id", func(t *testing.T, f *fixture) {
		f.committed(t, "r1", "c1", "c2")
		all := f.events(t, "r1")
		for i := range all {
			got, err := f.st.Events(f.ctx, "r1", all[i].ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, all[i+1:], sameEvent) {
				t.Fatalf("after %s: %v, want %v", all[i].ID, typesOf(got), typesOf(all[i+1:]))
			}
		}
		page, err := f.st.Events(f.ctx, "r1", all[1].ID, 2)
		if err != nil || !slices.EqualFunc(page, all[2:4], sameEvent) {
			t.Fatalf("a page of 2 after the second: %v, %v", typesOf(page), err)
		}
		none, err := f.st.Events(f.ctx, "nope", "", 10)
		if err != nil || len(none) != 0 {
			t.Fatalf("events of an unknown run = %v, %v", none, err)
		}
	}},
	{"wait_events_returns_what_follows_an_id", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		all := f.events(t, "r1")
		got, err := f.st.WaitEvents(f.ctx, "r1", all[0].ID, time.Second)
		if err != nil || !slices.EqualFunc(got, all[1:], sameEvent) {
			t.Fatalf("WaitEvents = %v, %v", typesOf(got), err)
		}
		got, err = f.st.WaitEvents(f.ctx, "r1", "", time.Second)
		if err != nil || len(got) != len(all) {
			t.Fatalf("WaitEvents from the start = %v, %v", typesOf(got), err)
		}
	}},
	{"wait_events_wakes_on_an_appended_event", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		all := f.events(t, "r1")
		type result struct {
			evs []pipeline.Event
			err error
		}
		done := make(chan result, 1)
		go func() {
			// The wait names the last id it saw, so an event appended
			// before the read starts is returned all the same.
			evs, err := f.st.WaitEvents(f.ctx, "r1", all[len(all)-1].ID, 10*time.Second)
			done <- result{evs, err}
		}()
		if _, err := f.st.FinishRun(f.ctx, "r1", pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(2)); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil || len(r.evs) != 1 || r.evs[0].Type != pipeline.EventRunFinished {
			t.Fatalf("WaitEvents = %v, %v", typesOf(r.evs), r.err)
		}
	}},
	{"wait_events_gives_nothing_when_nothing_comes", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		all := f.events(t, "r1")
		got, err := f.st.WaitEvents(f.ctx, "r1", all[0].ID, 10*time.Millisecond)
		if err != nil || got == nil || len(got) != 0 {
			t.Fatalf("WaitEvents = %#v, %v; want an empty slice", got, err)
		}
	}},
	{"wait_events_returns_on_cancel", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		all := f.events(t, "r1")
		ctx, cancel := context.WithCancel(f.ctx)
		done := make(chan error, 1)
		go func() {
			_, err := f.st.WaitEvents(ctx, "r1", all[0].ID, 2*time.Second)
			done <- err
		}()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("WaitEvents after cancel = %v", err)
		}
	}},
}

// idBefore orders stream ids ("ms-seq").
func idBefore(a, b string) bool {
	parse := func(id string) (ms, seq int64) {
		m, q, _ := strings.Cut(id, "-")
		ms, _ = strconv.ParseInt(m, 10, 64)
		seq, _ = strconv.ParseInt(q, 10, 64)
		return ms, seq
	}
	am, as := parse(a)
	bm, bs := parse(b)
	return am < bm || (am == bm && as < bs)
}

func sameEvent(a, b pipeline.Event) bool {
	return a.ID == b.ID && a.Type == b.Type && a.CallID == b.CallID && a.Step == b.Step &&
		a.At.Equal(b.At) && string(a.Data) == string(b.Data)
}

// readBoth is "<call id> <data>" of the events of type typ of run runID as
// each of the two reads gives them: Events, and WaitEvents from the start.
func (f *fixture) readBoth(t *testing.T, runID string, typ pipeline.EventType) [2][]string {
	t.Helper()
	wait, err := f.st.WaitEvents(f.ctx, runID, "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out [2][]string
	for i, evs := range [][]pipeline.Event{f.events(t, runID), wait} {
		for _, ev := range evs {
			if ev.Type == typ {
				out[i] = append(out[i], ev.CallID+" "+string(ev.Data))
			}
		}
	}
	return out
}

// stored is the events of type typ in run runID's stream as they are
// stored, before the store reads back what they refer to: each entry's ref
// and data ("call {...}").
func (f *fixture) stored(t *testing.T, runID string, typ pipeline.EventType) []string {
	t.Helper()
	entries, err := f.rdb.XRange(f.ctx, f.prefix+":{"+runID+"}:events", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Values["type"] == string(typ) {
			out = append(out, fmt.Sprint(e.Values["ref"], " ", e.Values["data"]))
		}
	}
	return out
}
