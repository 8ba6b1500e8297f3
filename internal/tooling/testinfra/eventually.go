package testinfra

import (
	"testing"
	"time"
)

// Eventually polls cond every 10 ms until it holds, and fails t when within
// passes first, with what (called then) saying what it saw. Tests wait on
// conditions this way, never on a fixed sleep.
func Eventually(t testing.TB, within time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
