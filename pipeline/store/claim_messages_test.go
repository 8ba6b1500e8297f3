package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// A claim on a server whose scripts were flushed (a restart) loads the
// script and goes on. On a server of its own: a flush in the middle of the
// parallel contract cases would refuse their pipelined scripts.
func TestStore_a_claim_after_the_scripts_were_flushed_loads_them(t *testing.T) {
	rdb := testinfra.RedisServerClient(t)
	f := &fixture{st: store.New(rdb, store.WithPrefix("flushed")), rdb: rdb, prefix: "flushed", ctx: context.Background()}
	f.created(t, "r1")
	if err := f.rdb.ScriptFlush(f.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	run, msgs, err := f.st.ClaimStepWithMessages(f.ctx, "r1", 0, lease("w1", at(30)), at(1))
	if err != nil || run.Attempts != 1 || len(msgs) != 1 || msgs[0].Content != "hello" {
		t.Fatalf("claim = %+v, %+v, %v", run, msgs, err)
	}
}

var claimMessagesCases = []contractCase{
	{"a_claim_with_messages_reads_the_conversation_in_the_same_round_trip", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
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
	}}, {"a_claim_reads_the_last_turn_and_what_follows_unless_the_last_turn_changed", func(t *testing.T, f *fixture) {
		msgsKey := f.prefix + ":{r1}:msgs"
		next := func(step int, callID string) []pipeline.Message { return f.nextStep(t, "r1", step, callID) }
		f.created(t, "r1")
		if _, msgs, err := f.st.ClaimStepWithMessages(f.ctx, "r1", 0, lease("w1", at(30)), at(1)); err != nil || len(msgs) != 1 {
			t.Fatalf("claim of step 0 = %+v, %v", msgs, err)
		}
		if msgs := next(0, "c1"); len(msgs) != 3 || msgs[2].ToolCallID != "c1" {
			t.Fatalf("conversation at step 1 = %+v", msgs)
		}
		// What this process read before its last turn is not read again: a
		// change there (which nothing in stepwise makes) goes unseen...
		if err := f.rdb.LSet(f.ctx, msgsKey, 0, `{"role":"user","content":"changed"}`).Err(); err != nil {
			t.Fatal(err)
		}
		msgs := next(1, "c2")
		if len(msgs) != 5 || msgs[0].Content != "hello" || msgs[4].ToolCallID != "c2" {
			t.Fatalf("conversation at step 2 = %+v, want the input as first read and both steps", msgs)
		}
		// ...but a last turn that is not what was read (a Redis that lost
		// its last writes and saw the step run again) has the whole
		// conversation read again.
		if err := f.rdb.LSet(f.ctx, msgsKey, 3, `{"role":"assistant","content":"run again","tool_calls":[{"id":"c2","name":"echo","arguments":{}}]}`).Err(); err != nil {
			t.Fatal(err)
		}
		msgs = next(2, "c3")
		if len(msgs) != 7 || msgs[0].Content != "changed" || msgs[3].Content != "run again" || msgs[6].ToolCallID != "c3" {
			t.Fatalf("conversation at step 3 = %+v, want Redis's, read again", msgs)
		}
	}},
	{"a_claimed_conversation_has_no_room_to_append_in_place", func(t *testing.T, f *fixture) {
		// The conversation a claim gives is the store's cached one: a
		// caller that appends to it (a request's context messages) must get
		// a copy, whatever room the cache's array has grown.
		f.created(t, "r1")
		if _, _, err := f.st.ClaimStepWithMessages(f.ctx, "r1", 0, lease("w1", at(30)), at(1)); err != nil {
			t.Fatal(err)
		}
		for step := range 3 {
			msgs := f.nextStep(t, "r1", step, fmt.Sprintf("c%d", step))
			if len(msgs) != 3+2*step || cap(msgs) != len(msgs) {
				t.Fatalf("the conversation at step %d: %d messages, room for %d; want %d and no more", step+1, len(msgs), cap(msgs), 3+2*step)
			}
		}
	}},
	{"a_long_runs_claims_do_not_copy_its_conversation", func(t *testing.T, f *fixture) {
		// Each claim appends the step's new messages to the cached
		// conversation in place, where its array has room: a claim that
		// copied every message before its step made a long run's claims
		// cost the square of its steps.
		f.created(t, "r1")
		if _, _, err := f.st.ClaimStepWithMessages(f.ctx, "r1", 0, lease("w1", at(30)), at(1)); err != nil {
			t.Fatal(err)
		}
		arrays := map[*pipeline.Message]bool{}
		const steps = 16
		for step := range steps {
			msgs := f.nextStep(t, "r1", step, fmt.Sprintf("c%d", step))
			arrays[&msgs[0]] = true
		}
		if len(arrays) > steps/2 {
			t.Errorf("%d claims gave conversations in %d arrays: each copied the messages before it", steps, len(arrays))
		}
	}},
}

// nextStep commits step of run id (claimed by w1) with one call, callID,
// finishes the call, ends the step and claims the next: the next step's
// conversation.
func (f *fixture) nextStep(t *testing.T, id string, step int, callID string) []pipeline.Message {
	t.Helper()
	f.commit(t, id, step, "w1", callID)
	f.done(t, id, callID)
	tool := pipeline.Message{Role: pipeline.RoleTool, Content: `{"ok":true}`, ToolCallID: callID}
	_, claimed, err := f.st.EndStepAndClaim(f.ctx, id, step, store.StepEnd{ToolMessages: []pipeline.Message{tool}}, lease("w1", at(40)), at(5))
	if err != nil || claimed == nil {
		t.Fatalf("EndStepAndClaim(step %d) = %+v, %v", step, claimed, err)
	}
	return claimed.Messages
}

// breakRead fails the first pipelined read of a conversation after its
// reply came, as a connection that breaks between a claim's reply and its
// read's would: the claim holds, its read does not.
type breakRead struct{ broken atomic.Bool }

func (*breakRead) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*breakRead) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (b *breakRead) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if c.Name() == "lrange" && strings.HasSuffix(fmt.Sprint(c.Args()[1]), ":msgs") && b.broken.CompareAndSwap(false, true) {
				c.SetErr(io.ErrUnexpectedEOF)
			}
		}
		return err
	}
}

// A claim whose conversation read fails reads it again rather than leave
// the step it claimed to its lease (30 s by default: nobody else runs it
// before): the claim of a step, and the end of a step that claims the next.
func TestStore_a_claim_whose_conversation_read_failed_reads_it_again(t *testing.T) {
	rdb := testinfra.RedisServerClient(t)
	hook := &breakRead{}
	rdb.AddHook(hook)
	f := &fixture{st: store.New(rdb), rdb: rdb, prefix: "sw", ctx: context.Background()}
	tool := func(id string) store.StepEnd {
		return store.StepEnd{ToolMessages: []pipeline.Message{{Role: pipeline.RoleTool, Content: `{"ok":true}`, ToolCallID: id}}}
	}
	// Run r0 loads the scripts: a first EVALSHA that finds none is sent
	// again, with its read.
	for _, id := range []string{"r0", "r1"} {
		f.created(t, id)
	}
	if _, _, err := f.st.ClaimStepWithMessages(f.ctx, "r0", 0, lease("w1", at(30)), at(1)); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "r0", 0, "w1", "c0")
	f.done(t, "r0", "c0")
	if _, _, err := f.st.EndStepAndClaim(f.ctx, "r0", 0, tool("c0"), lease("w1", at(40)), at(5)); err != nil {
		t.Fatal(err)
	}

	hook.broken.Store(false)
	run, msgs, err := f.st.ClaimStepWithMessages(f.ctx, "r1", 0, lease("w1", at(30)), at(1))
	if !hook.broken.Load() || err != nil || run.Attempts != 1 || len(msgs) != 1 || msgs[0].Content != "hello" {
		t.Fatalf("claim = %+v, %+v, %v (read broken: %v)", run, msgs, err, hook.broken.Load())
	}
	f.commit(t, "r1", 0, "w1", "c1")
	f.done(t, "r1", "c1")
	hook.broken.Store(false)
	_, claimed, err := f.st.EndStepAndClaim(f.ctx, "r1", 0, tool("c1"), lease("w1", at(40)), at(5))
	if !hook.broken.Load() || err != nil || claimed == nil || len(claimed.Messages) != 3 || claimed.Messages[2].ToolCallID != "c1" {
		t.Fatalf("end and claim = %+v, %v (read broken: %v)", claimed, err, hook.broken.Load())
	}
}

// A run's conversation stays in the store's cache while the run goes on
// (its next claim reads only what is new), and leaves it once the run has
// ended and its result is out: a worker's cache holds the runs it may
// claim again, not every run it ran.
func TestStore_an_ended_run_leaves_the_conversation_cache(t *testing.T) {
	rdb := testinfra.RedisClient(t)
	f := &fixture{st: store.New(rdb), rdb: rdb, prefix: "sw", ctx: context.Background()}
	f.created(t, "r")
	if _, _, err := f.st.ClaimStepWithMessages(f.ctx, "r", 0, lease("w1", at(30)), at(1)); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "r", 0, "w1", "c0")
	f.done(t, "r", "c0")
	end := store.StepEnd{ToolMessages: []pipeline.Message{{Role: pipeline.RoleTool, Content: `{"ok":true}`, ToolCallID: "c0"}}}
	if _, claimed, err := f.st.EndStepAndClaim(f.ctx, "r", 0, end, lease("w1", at(40)), at(5)); err != nil || claimed == nil {
		t.Fatalf("end and claim: %+v, %v", claimed, err)
	}
	if !store.Caches(f.st, "r") {
		t.Fatal("the conversation of a run that goes on is not cached")
	}
	f.commit(t, "r", 1, "w1")
	run, _, err := f.st.EndStep(f.ctx, "r", 1, store.StepEnd{Finish: &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}}, at(7))
	if err != nil || run.Status != pipeline.RunDone {
		t.Fatalf("end: %+v, %v", run, err)
	}
	if err := f.st.MarkPublished(f.ctx, f.run(t, "r"), at(8)); err != nil {
		t.Fatal(err)
	}
	if store.Caches(f.st, "r") {
		t.Fatal("the conversation of an ended run is still cached")
	}
}
