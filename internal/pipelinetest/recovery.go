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
			h := New(t, sc)
			want := h.Undisturbed()
			n := 1
			for ; ; n++ {
				got, cut := h.Crash(side, n)
				if !cut {
					break
				}
				Same(t, fmt.Sprintf("%s crashing at its operation %d", side, n), want, got)
			}
			if n == 1 {
				t.Fatalf("%s made no operation: nothing was cut", side)
			}
			t.Logf("%s cut at each of its %d operations", side, n-1)
		})
	}
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
