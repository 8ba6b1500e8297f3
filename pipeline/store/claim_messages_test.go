package store_test

import (
	"errors"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/store"
)

var claimMessagesCases = []contractCase{
	{"a_claim_with_messages_reads_the_conversation_in_the_same_round_trip", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		// The script is not cached yet on a fresh server, or was flushed:
		// the claim loads it and goes on.
		if err := f.rdb.ScriptFlush(f.ctx).Err(); err != nil {
			t.Fatal(err)
		}
		run, msgs, err := f.st.ClaimStepWithMessages(f.ctx, "r1", 0, lease("w1", at(30)), at(1))
		if err != nil || run.Attempts != 1 || len(msgs) != 1 || msgs[0].Content != "hello" {
			t.Fatalf("claim = %+v, %+v, %v", run, msgs, err)
		}
		// A refused claim gives the current run and no messages.
		run, msgs, err = f.st.ClaimStepWithMessages(f.ctx, "r1", 0, lease("w2", at(30)), at(2))
		if !errors.Is(err, store.ErrLeaseHeld) || msgs != nil || run.LeaseOwner != "w1" {
			t.Fatalf("second claim = %+v, %+v, %v", run, msgs, err)
		}
		if _, _, err := f.st.ClaimStepWithMessages(f.ctx, "nope", 0, lease("w1", at(30)), at(1)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("claim of an unknown run: %v", err)
		}
	}},
}
