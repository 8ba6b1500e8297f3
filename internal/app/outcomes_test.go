package app_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/topics"
)

// kcatProduce publishes lines to topic with kcat, keyed by run like
// stepwise's own publisher.
func kcatProduce(t *testing.T, stack *app.Stack, topic, key string, lines ...string) {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kcat is not installed (apt-get install -y kcat)")
		}
		t.Skip("kcat is not installed")
	}
	cmd := exec.Command(kcat, "-P", "-b", stack.Kafka.Brokers[0], "-t", topic, "-k", key, "-X", "topic.partitioner=murmur2_random")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat: %v: %s", err, out)
	}
}

// subscribeFromStart consumes topic from its start in a group of its own,
// until t ends.
func subscribeFromStart(t *testing.T, stack *app.Stack, topic string) <-chan *message.Message {
	t.Helper()
	sub, err := stack.Subscriber(fmt.Sprintf("follow-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = sub.Close() })
	msgs, err := sub.Subscribe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// followOutcomes collects the decision-outcomes topic from its start.
func followOutcomes(t *testing.T, stack *app.Stack) func() []string {
	t.Helper()
	msgs := subscribeFromStart(t, stack, stack.Names.DecisionOutcomes())
	got := make(chan string, 100)
	go func() {
		for m := range msgs {
			o, err := topics.Decode[topics.DecisionOutcome](m.Payload)
			if err == nil {
				got <- fmt.Sprintf("%s %s %s", o.DecisionID, o.Outcome, o.Reason)
			}
			m.Ack()
		}
	}()
	var seen []string
	return func() []string {
		for {
			select {
			case s := <-got:
				seen = append(seen, s)
			default:
				return seen
			}
		}
	}
}

// Decisions published with kcat get exactly one outcome each: applied,
// rejected with the reason, held then applied; a duplicate gets none, and
// a decision for a run that does not exist is rejected too.
func TestOutcomes_each_decision_from_kafka_gets_one_outcome(t *testing.T) {
	stack, base := approvalStack(t)
	outcomes := followOutcomes(t, stack)
	id := createRun(t, base, "r-out", "approvals", script(call("A", "tool_a", `{"n":1}`), call("B", "tool_b", `{"n":2}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })

	dec := func(id, call, extra string) string {
		return fmt.Sprintf(`{"decision_id":%q,"run_id":"r-out","call_id":%q,"action":"resume","decided_by":"ticketing"%s}`, id, call, extra)
	}
	kcatProduce(t, stack, stack.Names.Decisions(), id,
		dec("k-1", "A", ""), dec("k-1", "A", ""), // a duplicate
		dec("k-2", "B", `,"args_hash":"wrong"`),
		dec("k-3", "B", ""))
	kcatProduce(t, stack, stack.Names.Decisions(), "r-none", `{"decision_id":"k-4","run_id":"r-none","call_id":"X","action":"resume"}`)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)

	want := []string{
		"k-1 applied ",
		"k-2 rejected args_hash does not match the parked arguments",
		"k-3 applied ",
		"k-4 rejected run not found",
	}
	var got []string
	testinfra.Eventually(t, 20*time.Second, func() bool { got = outcomes(); return len(got) >= len(want) },
		func() string { return fmt.Sprintf("outcomes %q", got) })
	time.Sleep(500 * time.Millisecond) // what a second outcome would take
	got = outcomes()
	if strings.Join(slices.Sorted(slices.Values(got)), "\n") != strings.Join(want, "\n") {
		t.Fatalf("outcomes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A decision that arrives before its call parks is held, then applied
// once it parks: two outcomes, in that order.
func TestOutcomes_a_held_decision_gets_held_then_applied(t *testing.T) {
	stack, base := approvalStack(t)
	outcomes := followOutcomes(t, stack)
	// A is proposed only in step 1, after a call of 1.5 s: the decision
	// arrives for a call that does not exist yet.
	id := createRun(t, base, "r-held", "approvals", `{"provider":"script","turns":[`+
		`{"text":"first","tool_calls":[`+call("C", "sleep", `{"ms":1500}`)+`]},`+
		`{"text":"then","tool_calls":[`+call("A", "tool_a", `{"n":1}`)+`]},{"text":"done"}]}`)
	kcatProduce(t, stack, stack.Names.Decisions(), id,
		`{"decision_id":"h-1","run_id":"r-held","call_id":"A","action":"resume"}`)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 2)
	var got []string
	testinfra.Eventually(t, 20*time.Second, func() bool { got = outcomes(); return len(got) >= 2 },
		func() string { return fmt.Sprintf("outcomes %q", got) })
	if len(got) != 2 || !strings.HasPrefix(got[0], "h-1 held") || got[1] != "h-1 applied " {
		t.Fatalf("outcomes %q, want held then applied", got)
	}
}

// A decision held for a call the run never proposes is rejected when the
// run ends: held, then rejected, with the reason. The step that ends the
// run reads the held decisions in its own script.
func TestOutcomes_a_decision_held_for_a_call_that_never_comes_is_rejected_when_the_run_ends(t *testing.T) {
	stack, base := approvalStack(t)
	outcomes := followOutcomes(t, stack)
	id := createRun(t, base, "r-orphan", "approvals", `{"provider":"script","turns":[`+
		`{"text":"first","tool_calls":[`+call("C", "sleep", `{"ms":1500}`)+`]},{"text":"done"}]}`)
	kcatProduce(t, stack, stack.Names.Decisions(), id,
		`{"decision_id":"o-1","run_id":"r-orphan","call_id":"Z","action":"resume"}`)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)
	var got []string
	testinfra.Eventually(t, 20*time.Second, func() bool { got = outcomes(); return len(got) >= 2 },
		func() string { return fmt.Sprintf("outcomes %q", got) })
	if len(got) != 2 || !strings.HasPrefix(got[0], "o-1 held") || got[1] != "o-1 rejected call Z did not park before the run ended" {
		t.Fatalf("outcomes %q, want held then rejected when the run ended", got)
	}
}
