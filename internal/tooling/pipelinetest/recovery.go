package pipelinetest

import (
	"fmt"
	"testing"
)

// CutEverywhere drives every scenario undisturbed, then once per operation
// of side with side crashing at that operation, and checks each drive ends
// as the undisturbed one. It fails t when side makes no operation at all in
// a scenario (nothing would be tested).
func CutEverywhere(t *testing.T, side Side) {
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			CutEach(t, sc, side)
		})
	}
}

// CutEach is CutEverywhere for one scenario.
func CutEach(t *testing.T, sc Scenario, side Side) {
	t.Helper()
	atEach(t, New(t, sc), side, "crashing at", (*Harness).Crash)
}

// FailEverywhere drives every scenario undisturbed, then once per
// operation of side with that one operation failing (a transient fault)
// and side going on, and checks each drive ends as the undisturbed one:
// whatever the failed write or publish left undone, the reconcile finds
// in the run's state and does. It fails t when side makes no operation at
// all in a scenario.
func FailEverywhere(t *testing.T, side Side) {
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			FailEach(t, sc, side)
		})
	}
}

// FailEach is FailEverywhere for one scenario.
func FailEach(t *testing.T, sc Scenario, side Side) {
	t.Helper()
	atEach(t, New(t, sc), side, "failing", (*Harness).Fail)
}

// atEach drives h undisturbed, then with fault at each operation n of side
// in turn until side makes fewer than n, and checks each drive ends as the
// undisturbed one.
func atEach(t *testing.T, h *Harness, side Side, what string, fault func(*Harness, Side, int) (Outcome, bool)) {
	t.Helper()
	want := h.Undisturbed()
	n := 1
	for ; ; n++ {
		got, hit := fault(h, side, n)
		if !hit {
			break
		}
		Same(t, fmt.Sprintf("%s %s its operation %d", side, what, n), want, got)
	}
	if n == 1 {
		t.Fatalf("%s made no operation: no fault was injected", side)
	}
	t.Logf("%s %s each of its %d operations", side, what, n-1)
}

// Disorder drives every scenario with every message delivered twice, and
// with the messages delivered newest first, and checks each drive ends as
// the undisturbed one.
func Disorder(t *testing.T) {
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			h := New(t, sc)
			want := h.Undisturbed()
			Same(t, "every message twice", want, h.Disordered(Twice))
			Same(t, "newest message first", want, h.Disordered(NewestFirst))
		})
	}
}
