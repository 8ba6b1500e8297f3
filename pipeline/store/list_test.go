package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var listCases = []contractCase{
	{"list_pages_newest_first_and_new_runs_do_not_shift_the_pages", func(t *testing.T, f *fixture) {
		// r1..r5 one second apart, plus r3a and r3b in the same millisecond
		// as r3: ties are ordered by id, newest first.
		for i, id := range []string{"r1", "r2", "r3", "r3a", "r3b", "r4", "r5"} {
			sec := i
			if i >= 2 && i <= 4 {
				sec = 2
			}
			f.createAt(t, id, "assistant", at(sec))
		}
		var got []string
		page, cursor := f.list(t, store.ListFilter{Limit: 3})
		got = append(got, page...)
		f.createAt(t, "r6", "assistant", at(100)) // newer than everything listed
		f.createAt(t, "r0", "assistant", at(-5))  // older than everything listed
		for cursor != "" {
			page, cursor = f.list(t, store.ListFilter{Limit: 3, Cursor: cursor})
			got = append(got, page...)
		}
		want := []string{"r5", "r4", "r3b", "r3a", "r3", "r2", "r1", "r0"}
		if !slices.Equal(got, want) {
			t.Fatalf("pages = %v, want %v", got, want)
		}
	}},
	{"a_cursor_whose_run_left_the_index_goes_on_with_the_runs_after_it", func(t *testing.T, f *fixture) {
		// r3, r3a, r3b, r3c in one millisecond, ordered by id, newest first;
		// the page's last run leaves the index before the next page (the
		// trim of expired runs; a page of the live index drops an ended
		// one), and the next page goes on with those after it, of its
		// millisecond first.
		for _, r := range []struct {
			id  string
			sec int
		}{{"r1", 1}, {"r3", 3}, {"r3a", 3}, {"r3b", 3}, {"r3c", 3}, {"r5", 5}} {
			f.createAt(t, r.id, "assistant", at(r.sec))
		}
		page, cursor := f.list(t, store.ListFilter{Limit: 2})
		if !slices.Equal(page, []string{"r5", "r3c"}) {
			t.Fatalf("first page = %v", page)
		}
		if err := f.rdb.ZRem(f.ctx, f.prefix+":runs", "r3c").Err(); err != nil {
			t.Fatal(err)
		}
		got := page
		for cursor != "" {
			page, cursor = f.list(t, store.ListFilter{Limit: 2, Cursor: cursor})
			got = append(got, page...)
		}
		if want := []string{"r5", "r3c", "r3b", "r3a", "r3", "r1"}; !slices.Equal(got, want) {
			t.Fatalf("pages = %v, want %v", got, want)
		}
	}},
	{"list_filters_by_status_and_agent", func(t *testing.T, f *fixture) {
		f.createAt(t, "a1", "alpha", at(1))
		f.createAt(t, "b1", "beta", at(2))
		f.createAt(t, "a2", "alpha", at(3))
		if _, err := f.st.FinishRun(f.ctx, "a1", pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(4)); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			f    store.ListFilter
			want []string
		}{
			{store.ListFilter{Agent: "alpha"}, []string{"a2", "a1"}},
			{store.ListFilter{Status: pipeline.RunCreated}, []string{"a2", "b1"}},
			{store.ListFilter{Status: pipeline.RunDone, Agent: "alpha"}, []string{"a1"}},
			{store.ListFilter{Agent: "gamma"}, nil},
		} {
			got, cursor := f.list(t, c.f)
			if !slices.Equal(got, c.want) || cursor != "" {
				t.Fatalf("%+v: %v (cursor %q), want %v", c.f, got, cursor, c.want)
			}
		}
	}},
	{"list_scans_at_most_ten_times_the_limit_per_call", func(t *testing.T, f *fixture) {
		// A termination has no index of its own: the index of every run is
		// read.
		f.createAt(t, "rare", "alpha", at(0))
		if _, err := f.st.FinishRun(f.ctx, "rare", pipeline.Termination{Reason: pipeline.ReasonCancelled}, at(0)); err != nil {
			t.Fatal(err)
		}
		for i := range 25 {
			f.createAt(t, fmt.Sprintf("r%02d", i), "alpha", at(1+i))
		}
		cancelled := store.ListFilter{Termination: pipeline.ReasonCancelled, Limit: 2}
		page, cursor := f.list(t, cancelled)
		if len(page) != 0 || cursor == "" {
			t.Fatalf("first call = %v, cursor %q; want nothing yet and a cursor", page, cursor)
		}
		cancelled.Cursor = cursor
		page, cursor = f.list(t, cancelled)
		if !slices.Equal(page, []string{"rare"}) || cursor != "" {
			t.Fatalf("second call = %v, cursor %q", page, cursor)
		}
	}},
	{"list_refuses_a_bad_cursor_or_status", func(t *testing.T, f *fixture) {
		for _, lf := range []store.ListFilter{{Cursor: "!!"}, {Cursor: "bm9jb2xvbg"}, {Status: "sleeping"}} {
			_, _, err := f.st.ListRuns(f.ctx, lf)
			wantErr(t, err, store.ErrInvalid)
		}
	}},
}

// createAt creates run id of agent at now.
func (f *fixture) createAt(t *testing.T, id, agent string, now time.Time) {
	t.Helper()
	run := newRun(id)
	run.Agent = agent
	f.create(t, run, now)
}

// create creates run at now.
func (f *fixture) create(t *testing.T, run pipeline.Run, now time.Time) {
	t.Helper()
	if _, _, err := f.st.CreateRun(f.ctx, run, input, now); err != nil {
		t.Fatalf("CreateRun(%s): %v", run.ID, err)
	}
}

func (f *fixture) list(t *testing.T, lf store.ListFilter) ([]string, string) {
	t.Helper()
	runs, cursor, err := f.st.ListRuns(f.ctx, lf)
	if err != nil {
		t.Fatalf("ListRuns(%+v): %v", lf, err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids, cursor
}
