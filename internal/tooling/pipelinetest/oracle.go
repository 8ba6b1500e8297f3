package pipelinetest

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// Same fails t unless got ended as want did: the same status, step,
// termination and usage, the same conversation, every commit event exactly
// as often (nothing committed twice, nothing lost), the same decision
// outcomes published, no budget hold left, the RunEnd hooks run before the
// result when want ran them, and at least one run result, each equal to
// want's; the same child runs, each ended as want's; and, once a sweep has passed, kept where want was (retired,
// every key expiring).
func Same(t *testing.T, what string, want, got Outcome) {
	t.Helper()
	if got.Run.Status != want.Run.Status || got.Run.Step != want.Run.Step ||
		!reflect.DeepEqual(got.Run.Termination, want.Run.Termination) || got.Run.Usage != want.Run.Usage {
		t.Fatalf("%s: run ended %s at step %d with %+v, usage %+v; undisturbed: %s at step %d with %+v, usage %+v",
			what, got.Run.Status, got.Run.Step, got.Run.Termination, got.Run.Usage,
			want.Run.Status, want.Run.Step, want.Run.Termination, want.Run.Usage)
	}
	if a, b := jsonOf(t, got.Messages), jsonOf(t, want.Messages); a != b {
		t.Fatalf("%s: conversation\n%s\nundisturbed:\n%s", what, a, b)
	}
	if !maps.Equal(got.Commits, want.Commits) {
		var diff []string
		for _, k := range slices.Sorted(maps.Keys(union(got.Commits, want.Commits))) {
			if got.Commits[k] != want.Commits[k] {
				diff = append(diff, k+": "+strconv.Itoa(got.Commits[k])+" (undisturbed "+strconv.Itoa(want.Commits[k])+")")
			}
		}
		t.Fatalf("%s: commit events differ: %v", what, diff)
	}
	if !slices.Equal(got.Outcomes, want.Outcomes) {
		t.Fatalf("%s: decision outcomes published %v; undisturbed %v", what, got.Outcomes, want.Outcomes)
	}
	if len(got.Holds) > 0 {
		t.Fatalf("%s: budget holds left after the run: %v", what, got.Holds)
	}
	if got.RunEnds == 0 && want.RunEnds > 0 {
		t.Fatalf("%s: the result was published before the RunEnd hooks succeeded", what)
	}
	if !slices.Equal(got.Children, want.Children) {
		t.Fatalf("%s: child runs ended\n%v\nundisturbed:\n%v", what, got.Children, want.Children)
	}
	if got.Kept != want.Kept {
		t.Fatalf("%s: the run is kept in %q; undisturbed in %q", what, got.Kept, want.Kept)
	}
	if len(got.Results) == 0 {
		t.Fatalf("%s: no run result was published", what)
	}
	for _, r := range got.Results {
		if !reflect.DeepEqual(r, want.Results[0]) {
			t.Fatalf("%s: run result %+v; undisturbed %+v", what, r, want.Results[0])
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func union(a, b map[string]int) map[string]int {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}
