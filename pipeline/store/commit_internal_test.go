package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// commit_step refuses a message.assistant event without the hole its
// index goes in (a template the store did not make) before it writes
// anything: the conversation is as it was, and the step still inferring.
func TestCommitStep_refuses_an_assistant_event_without_its_hole_and_writes_nothing(t *testing.T) {
	ctx := context.Background()
	rdb := testinfra.RedisServerClient(t)
	s := New(rdb)
	now := time.Unix(1_700_000_000, 0)
	run := pipeline.Run{ID: "r1", Agent: "a"}
	if _, _, err := s.StartRun(ctx, run, []pipeline.Message{{Role: pipeline.RoleUser, Content: "hi"}}, now, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ClaimStepWithMessages(ctx, "r1", 0, Lease{Owner: "w1", Until: now.Add(time.Minute)}, now); err != nil {
		t.Fatal(err)
	}
	c := StepCommit{Assistant: pipeline.Message{Role: pipeline.RoleAssistant, Content: "done"}}
	cmd, _, err := s.commitStepArgs("r1", 0, "w1", c, now)
	if err != nil {
		t.Fatal(err)
	}
	argv8 := 3 + cmd.nkeys + 7
	cmd.args[argv8] = strings.ReplaceAll(cmd.args[argv8].(string), "\x00", "")
	_, err = s.run(ctx, cmd, "commit")
	if err == nil || !strings.Contains(err.Error(), "no NUL where its index goes") {
		t.Fatalf("commit with a template without its hole: %v", err)
	}
	if n := rdb.LLen(ctx, s.msgsKey("r1")).Val(); n != 1 {
		t.Errorf("the conversation holds %d messages after the refusal, want the input's 1", n)
	}
	if got, _ := s.GetRun(ctx, "r1"); got.StepState != pipeline.StepInferring {
		t.Errorf("the step is %q after the refusal, want still inferring", got.StepState)
	}
}
