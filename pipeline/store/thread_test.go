package store_test

import (
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/store"
)

var threadCases = []contractCase{
	{"a_threads_head_is_its_latest_turn_with_a_run_whatever_the_hint_says", func(t *testing.T, f *fixture) {
		head := func(want int) {
			t.Helper()
			if got, err := f.st.ThreadHead(f.ctx, "th"); err != nil || got != want {
				t.Fatalf("ThreadHead = %d, %v; want %d", got, err, want)
			}
		}
		head(0)
		for turn := 1; turn <= 3; turn++ {
			if _, _, err := f.st.CreateRun(f.ctx, newRun(store.ThreadRunID("th", turn)), input, t0); err != nil {
				t.Fatal(err)
			}
		}
		head(3) // no hint: probed from turn 1
		if err := f.st.SetThreadHead(f.ctx, "th", 2); err != nil {
			t.Fatal(err)
		}
		head(3) // a stale hint (its writer died before moving it): probed past
		if err := f.st.SetThreadHead(f.ctx, "th", 3); err != nil {
			t.Fatal(err)
		}
		head(3)
		if got := store.ThreadRunID("th", 1) + " " + store.ThreadRunID("th", 3); got != "th th~3" {
			t.Fatalf("run ids %q", got)
		}
	}},
}
