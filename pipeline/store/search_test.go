package store_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/store"
)

var searchCases = []contractCase{
	{"a_search_reads_the_index_of_its_rarest_value", func(t *testing.T, f *fixture) {
		f = f.searching(0, "order", "customer")
		// The run of order 7 is the oldest of 31: a scan of the newest
		// (ten times the limit) would not reach it; its value's index does.
		f.search(t, "o7", "alpha", "b1", `{"order":7,"customer":"acme"}`, at(0))
		for i := range 30 {
			f.search(t, fmt.Sprintf("r%02d", i), "alpha", "", `{"order":8,"customer":"acme"}`, at(1+i))
		}
		f.search(t, "beta1", "beta", "b1", `{"order":"7","customer":"acme","note":{"long":true}}`, at(40))
		for _, c := range []struct {
			f    store.ListFilter
			want []string
		}{
			{store.ListFilter{Meta: map[string]string{"order": "7"}, Limit: 1}, []string{"beta1"}},
			{store.ListFilter{Meta: map[string]string{"order": "7"}, Agent: "alpha", Limit: 1}, []string{"o7"}},
			{store.ListFilter{Meta: map[string]string{"order": "7", "customer": "acme"}}, []string{"beta1", "o7"}},
			{store.ListFilter{Batch: "b1"}, []string{"beta1", "o7"}},
			{store.ListFilter{Agent: "beta", Limit: 1}, []string{"beta1"}},
			{store.ListFilter{Meta: map[string]string{"customer": "other"}}, nil},
			{store.ListFilter{Agent: "alpha", Since: at(29), Until: at(31)}, []string{"r29", "r28"}},
			{store.ListFilter{Agent: "alpha", Until: at(1)}, []string{"o7"}},
		} {
			got, cursor := f.list(t, c.f)
			if !slices.Equal(got, c.want) || cursor != "" && c.f.Limit == 0 { // a full page has a cursor
				t.Errorf("%+v: %v (cursor %q), want %v", c.f, got, cursor, c.want)
			}
		}
	}},
	{"a_search_pages_by_cursor_within_its_time_range", func(t *testing.T, f *fixture) {
		f = f.searching(0, "order")
		for i := range 9 {
			f.search(t, fmt.Sprintf("r%d", i), "alpha", "", `{"order":7}`, at(i))
		}
		var got []string
		lf := store.ListFilter{Meta: map[string]string{"order": "7"}, Since: at(2), Until: at(8), Limit: 2}
		for {
			page, cursor := f.list(t, lf)
			got = append(got, page...)
			if cursor == "" {
				break
			}
			lf.Cursor = cursor
		}
		if want := []string{"r7", "r6", "r5", "r4", "r3", "r2"}; !slices.Equal(got, want) {
			t.Fatalf("pages = %v, want %v", got, want)
		}
	}},
	{"a_search_refuses_an_undeclared_key_and_an_overlong_value", func(t *testing.T, f *fixture) {
		f = f.searching(0, "order")
		for _, lf := range []store.ListFilter{
			{Meta: map[string]string{"customer": "acme"}},
			{Meta: map[string]string{"order": strings.Repeat("7", store.MaxSearchValue+1)}},
		} {
			_, _, err := f.st.ListRuns(f.ctx, lf)
			wantErr(t, err, store.ErrInvalid)
		}
	}},
	{"a_trimmed_run_leaves_its_search_indexes", func(t *testing.T, f *fixture) {
		f = f.searching(retention, "order")
		f.search(t, "r1", "alpha", "b1", `{"order":7}`, at(0))
		f.search(t, "r2", "alpha", "b1", `{"order":7}`, at(1))
		f.finishRun(t, "r1")
		if err := f.st.MarkPublished(f.ctx, f.run(t, "r1"), at(5)); err != nil {
			t.Fatal(err)
		}
		f.del(t, slices.Collect(mapKeys(f.runKeys(t, "r1"), f.prefix+":{r1}:"))...)
		if n, err := f.st.TrimRetired(f.ctx, at(5).Add(retention), 100); err != nil || n != 1 {
			t.Fatalf("TrimRetired = %d, %v", n, err)
		}
		for _, suffix := range []string{"a:alpha", "b:b1", "m:order=7"} {
			if ids, _ := f.rdb.ZRange(f.ctx, f.prefix+":runs:"+suffix, 0, -1).Result(); !slices.Equal(ids, []string{"r2"}) {
				t.Errorf("index %s = %v, want r2 alone", suffix, ids)
			}
		}
		if ids, _ := f.rdb.HKeys(f.ctx, f.prefix+":runs:searched").Result(); !slices.Equal(ids, []string{"r2"}) {
			t.Errorf("the lists of search indexes = %v, want r2's alone", ids)
		}
		if err := f.st.Forget(f.ctx, "r2"); err != nil {
			t.Fatal(err)
		}
		if keys := scanKeys(t, f.rdb, f.prefix+":runs:*"); len(keys) != 0 {
			t.Errorf("after r2 is forgotten, search keys are left: %v", keys)
		}
	}},
	{"runs_created_before_a_key_was_declared_are_found_by_it", func(t *testing.T, f *fixture) {
		f.search(t, "old", "alpha", "", `{"order":7}`, at(0))
		f.search(t, "other", "alpha", "", `{"order":8}`, at(1))
		// A Redis written before the search indexes: none of them.
		f.del(t, scanKeys(t, f.rdb, f.prefix+":runs:*")...)
		f = f.searching(0, "order")
		f.search(t, "new", "alpha", "", `{"order":7}`, at(2))
		got, _ := f.list(t, store.ListFilter{Meta: map[string]string{"order": "7"}})
		if !slices.Equal(got, []string{"new", "old"}) {
			t.Fatalf("search = %v, want new and old", got)
		}
		if got, _ := f.list(t, store.ListFilter{Agent: "alpha"}); !slices.Equal(got, []string{"new", "other", "old"}) {
			t.Fatalf("search by agent = %v", got)
		}
	}},
}

// searching returns f with a store that indexes runs by the metadata keys
// and keeps ended runs for retention (0: for good).
func (f *fixture) searching(retention time.Duration, keys ...string) *fixture {
	g := *f
	g.st = store.New(f.rdb, store.WithPrefix(f.prefix), store.WithRetention(retention), store.WithSearchableMetadata(keys...))
	return &g
}

// search creates run id of agent and batch with metadata at now.
func (f *fixture) search(t *testing.T, id, agent, batch, metadata string, now time.Time) {
	t.Helper()
	run := newRun(id)
	run.Agent, run.Batch, run.Metadata = agent, batch, json.RawMessage(metadata)
	f.create(t, run, now)
}

// A metadata value is searched for as its text: a string's characters, a
// number's or a literal's JSON; an object, an array or an overlong value
// has none.
func TestSearchValue_is_a_values_text(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want string
		ok   bool
	}{
		{`"acme"`, "acme", true},
		{`"a \"b\""`, `a "b"`, true},
		{`7`, "7", true},
		{`7.5`, "7.5", true},
		{`true`, "true", true},
		{`null`, "null", true},
		{`{"a":1}`, "", false},
		{`[1]`, "", false},
		{``, "", false},
		{`"` + strings.Repeat("x", store.MaxSearchValue+1) + `"`, "", false},
	} {
		got, ok := store.SearchValue(json.RawMessage(c.raw))
		if got != c.want && c.ok || ok != c.ok {
			t.Errorf("SearchValue(%s) = %q, %v; want %q, %v", c.raw, got, ok, c.want, c.ok)
		}
	}
}
