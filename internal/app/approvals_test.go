package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/topics"
)

// followApprovals collects the approval-requests topic from its start.
func followApprovals(t *testing.T, stack *app.Stack) func() []topics.ApprovalRequested {
	t.Helper()
	records := collect(t, stack, stack.Names.ApprovalRequests())
	return func() []topics.ApprovalRequested {
		var out []topics.ApprovalRequested
		for _, r := range records() {
			m, err := topics.Decode[topics.ApprovalRequested]([]byte(r.payload))
			if err != nil {
				t.Fatalf("approval request %s: %v", r.payload, err)
			}
			out = append(out, m)
		}
		return out
	}
}

// askedOf waits for the approval requests of run until there are n, and
// returns them.
func askedOf(t *testing.T, approvals func() []topics.ApprovalRequested, run string, n int) []topics.ApprovalRequested {
	t.Helper()
	var got []topics.ApprovalRequested
	testinfra.Eventually(t, 20*time.Second, func() bool {
		got = slices.DeleteFunc(approvals(), func(m topics.ApprovalRequested) bool { return m.RunID != run })
		return len(got) >= n
	}, func() string { return fmt.Sprintf("approval requests of %s: %+v", run, got) })
	return got
}

// waitOutcome waits for an outcome that starts with prefix ("<decision id>
// <outcome> <reason>") and returns it.
func waitOutcome(t *testing.T, outcomes func() []string, prefix string) string {
	t.Helper()
	var got []string
	var found string
	testinfra.Eventually(t, 20*time.Second, func() bool {
		got = outcomes()
		i := slices.IndexFunc(got, func(s string) bool { return strings.HasPrefix(s, prefix) })
		if i >= 0 {
			found = got[i]
		}
		return i >= 0
	}, func() string { return fmt.Sprintf("no outcome %q in %q", prefix, got) })
	return found
}

// The whole approval loop over Kafka, as a decider that only speaks Kafka
// runs it: the parking is announced once on approval-requests with what a
// decision needs, a decision published with kcat quotes it, and its
// applied outcome closes it.
func TestApprovals_a_parked_call_is_asked_on_kafka_and_a_kcat_decision_closes_it(t *testing.T) {
	stack, base := approvalStack(t)
	approvals, outcomes := followApprovals(t, stack), followOutcomes(t, stack)
	id := createRun(t, base, "r-ask", "approvals", script(call("A", "tool_a", `{"n":1}`)))

	ask := askedOf(t, approvals, id, 1)[0]
	hash, err := pipeline.ArgsHash(json.RawMessage(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if ask.V != 1 || ask.CallID != "A" || ask.Step != 0 || ask.Tool != "tool_a" || string(ask.Arguments) != `{"n":1}` ||
		ask.ArgsHash != hash || ask.Ticket == "" || ask.Reason == "" || ask.ResumeMode != pipeline.ResumeReplay ||
		ask.Agent != "approvals" || ask.Deadline != "" || ask.ArgumentsOmitted {
		t.Fatalf("approval request %+v", ask)
	}
	// It says what GET /v1/pending says of the call, in the same formats.
	var pending struct {
		Pending []map[string]any `json:"pending"`
	}
	if code := httpDo(t, http.MethodGet, base+"/v1/pending?run_id="+id, nil, &pending); code != http.StatusOK || len(pending.Pending) != 1 {
		t.Fatalf("pending: %d %+v", code, pending)
	}
	p := pending.Pending[0]
	if p["parked_at"] != ask.ParkedAt || p["ticket"] != ask.Ticket || p["args_hash"] != ask.ArgsHash || p["reason"] != ask.Reason {
		t.Fatalf("pending %+v, approval request %+v", p, ask)
	}

	kcatProduce(t, stack, stack.Names.Decisions(), id, fmt.Sprintf(
		`{"decision_id":"k-ask","run_id":%q,"call_id":%q,"action":"resume","args_hash":%q,"decided_by":"kafka-decider"}`,
		ask.RunID, ask.CallID, ask.ArgsHash))
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)
	waitOutcome(t, outcomes, "k-ask applied")
	if got := askedOf(t, approvals, id, 1); len(got) != 1 {
		t.Fatalf("a parking asked %d times: %+v", len(got), got)
	}
}

// An approval whose deadline passes, and one whose run is cancelled, are
// closed by stepwise's own outcome for the call, so a decider that asked
// sees every request closed.
func TestApprovals_an_expiry_and_a_cancel_each_close_the_request_with_an_outcome(t *testing.T) {
	stack, base := approvalStack(t)
	approvals, outcomes := followApprovals(t, stack), followOutcomes(t, stack)

	expiring := createRun(t, base, "r-ask-expiry", "approvals", script(call("T", "timed", `{}`)))
	if ask := askedOf(t, approvals, expiring, 1)[0]; ask.Deadline == "" || ask.OnTimeout != topics.ActionCancel {
		t.Fatalf("approval request with a deadline %+v", ask)
	}
	if got := waitOutcome(t, outcomes, "timeout:T@"); !strings.HasSuffix(got, " applied deadline passed: on_timeout cancel") {
		t.Fatalf("the expiry's outcome %q", got)
	}
	waitDone(t, base, expiring, 30*time.Second)

	cancelled := createRun(t, base, "r-ask-cancel", "approvals", script(call("C", "tool_a", `{}`)))
	askedOf(t, approvals, cancelled, 1)
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+cancelled+"/cancel", map[string]any{"reason": "not needed", "decided_by": "eve"}, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	waitOutcome(t, outcomes, "cancel:C applied run cancelled: eve: not needed")
}

// A publish of the approval request that fails after the script that
// parked the call (a broker hiccup, or a worker that dies there) loses
// nothing: the request stays in the run's outbox and the sweeper publishes
// it.
func TestApprovals_a_request_whose_publish_failed_goes_out_from_the_sweeper(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, approvalsConfig))
	approvals := followApprovals(t, stack)
	failing := &failFirst{Publisher: stack.Publisher, topic: stack.Names.ApprovalRequests(), seen: map[string]bool{}}
	stack.Publisher = failing
	workers(t, stack)
	base := serve(t, stack)

	id := createRun(t, base, "r-ask-lost", "approvals", script(call("A", "tool_a", `{}`)))
	if ask := askedOf(t, approvals, id, 1)[0]; ask.CallID != "A" {
		t.Fatalf("approval request %+v", ask)
	}
	failing.mu.Lock()
	defer failing.mu.Unlock()
	if !failing.seen[id] {
		t.Fatal("no publish of the approval request failed: the test tested nothing")
	}
}

// A call parked again after its deadline resumed it (its tool parks it
// once more) times out again: each parking's timeout is a decision of its
// own, not a duplicate of the first, so the call never stays parked past
// its deadline.
func TestApprovals_a_call_parked_again_times_out_again(t *testing.T) {
	stack, base := approvalStack(t)
	approvals, outcomes := followApprovals(t, stack), followOutcomes(t, stack)
	id := createRun(t, base, "r-again", "approvals", script(call("P", "timed_again", `{}`)))

	asks := askedOf(t, approvals, id, 3) // at the gate, then by its tool after each of two timeouts
	var timeouts []string
	testinfra.Eventually(t, 20*time.Second, func() bool {
		timeouts = slices.DeleteFunc(outcomes(), func(s string) bool { return !strings.HasPrefix(s, "timeout:P@") })
		return len(timeouts) >= 2
	}, func() string { return fmt.Sprintf("timeouts %q after the requests %+v", timeouts, asks) })
	if timeouts[0] == timeouts[1] || !strings.Contains(timeouts[1], " applied ") {
		t.Fatalf("the second parking's timeout %q", timeouts)
	}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+id+"/cancel", map[string]any{"reason": "enough"}, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	waitDone(t, base, id, 30*time.Second)
}
