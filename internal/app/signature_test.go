package app_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/topics"
)

const signedConfig = approvalsConfig + `decisions:
  require_signature: true
  producers:
    erp: {key_env: STEPWISE_TEST_ERP_KEY}
    gateway: {key_env: STEPWISE_TEST_GATEWAY_KEY}
`

// signedStack runs the workers and a gateway on a stack that requires
// signed decisions, with the keys of erp and the gateway set.
func signedStack(t *testing.T) (*app.Stack, string) {
	t.Helper()
	t.Setenv("STEPWISE_TEST_ERP_KEY", "erp-secret-1")
	t.Setenv("STEPWISE_TEST_GATEWAY_KEY", "gateway-secret-1")
	stack := connect(t, newInfra(t), parseConfig(t, signedConfig))
	workers(t, stack)
	return stack, serve(t, stack)
}

// produceSignedByERP publishes d to the decisions topic signed with erp's
// key.
func produceSignedByERP(t *testing.T, stack *app.Stack, d topics.Decision) {
	t.Helper()
	signed, err := topics.Sign(d, "erp", []byte("erp-secret-1"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := topics.Encode(signed)
	if err != nil {
		t.Fatal(err)
	}
	kcatProduce(t, stack, stack.Names.Decisions(), d.RunID, string(raw))
}

// With signatures required: decisions through the gateway are signed by
// it and apply; from Kafka, an unsigned or forged decision is rejected
// (outcome rejected, reason signature) and changes nothing, and one signed
// with the producer's key applies.
func TestSignature_only_signed_decisions_apply(t *testing.T) {
	stack, base := signedStack(t)
	outcomes := followOutcomes(t, stack)

	id := createRun(t, base, "r-signed", "approvals", script(call("A", "tool_a", `{"n":1}`), call("B", "tool_b", `{"n":2}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })

	unsigned := `{"decision_id":"u-1","run_id":"r-signed","call_id":"A","action":"resume"}`
	forged, _ := topics.Sign(topics.Decision{Header: topics.Header{RunID: id}, DecisionID: "f-1", CallID: "A", Action: topics.ActionResume}, "erp", []byte("guessed"))
	forgedRaw, _ := topics.Encode(forged)
	kcatProduce(t, stack, stack.Names.Decisions(), id, unsigned, string(forgedRaw))
	var got []string
	testinfra.Eventually(t, 20*time.Second, func() bool { got = outcomes(); return len(got) >= 2 },
		func() string { return fmt.Sprintf("outcomes %q", got) })
	if strings.Join(got, "|") != "u-1 rejected signature|f-1 rejected signature" {
		t.Fatalf("outcomes %q", got)
	}
	if v := getRun(t, base, id); v.Status != pipeline.RunWaiting || callOf(v, "A").Status != pipeline.CallSuspended {
		t.Fatalf("a refused decision changed the run: %s, A %s", v.Status, callOf(v, "A").Status)
	}

	produceSignedByERP(t, stack, topics.Decision{Header: topics.Header{RunID: id}, DecisionID: "g-1", CallID: "A", Action: topics.ActionResume, DecidedBy: "erp"})
	decide(t, base, id, map[string]any{"decision_id": "h-1", "call_id": "B", "action": "resume"}) // signed by the gateway
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)
	testinfra.Eventually(t, 20*time.Second, func() bool { got = outcomes(); return len(got) >= 4 },
		func() string { return fmt.Sprintf("outcomes %q", got) })
	if rest := strings.Join(got[2:], "|"); !strings.Contains(rest, "g-1 applied") || !strings.Contains(rest, "h-1 applied") {
		t.Fatalf("outcomes %q", got)
	}
}

// decided_by is what a decision claims; the producer whose key verified it
// is recorded beside it as signed_by, on the call (GET /v1/runs/{id}) and
// in its decision.applied event: a decision erp signed as "mallory" shows
// both. Through the gateway, the gateway signs.
func TestSignature_a_decision_records_the_producer_that_signed_it_beside_who_it_claims(t *testing.T) {
	stack, base := signedStack(t)

	id := createRun(t, base, "r-signed-by", "approvals", script(call("A", "tool_a", `{"n":1}`), call("B", "tool_b", `{"n":2}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	produceSignedByERP(t, stack, topics.Decision{Header: topics.Header{RunID: id}, DecisionID: "m-1", CallID: "A", Action: topics.ActionResume, DecidedBy: "mallory"})
	decide(t, base, id, map[string]any{"decision_id": "h-1", "call_id": "B", "action": "resume", "decided_by": "alice"})
	v := waitDone(t, base, id, 30*time.Second)

	for call, want := range map[string]string{"A": "mallory signed by erp", "B": "alice signed by gateway"} {
		if dec := callOf(v, call).Decision; dec == nil || dec.DecidedBy+" signed by "+dec.SignedBy != want {
			t.Errorf("call %s: decision %+v, want %s", call, dec, want)
		}
	}
	applied := eventsOf(runEvents(t, stack, id), pipeline.EventDecisionApplied)
	var signers []string
	for _, e := range applied {
		var data struct {
			DecidedBy string `json:"decided_by"`
			SignedBy  string `json:"signed_by"`
		}
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatal(err)
		}
		signers = append(signers, data.DecidedBy+"/"+data.SignedBy)
	}
	if slices.Sort(signers); strings.Join(signers, ",") != "alice/gateway,mallory/erp" {
		t.Fatalf("decision.applied events name %q", signers)
	}
}

// A run cancelled by a decision that a producer signed under another name
// says both in its termination.
func TestSignature_a_signed_cancel_names_its_signer_in_the_termination(t *testing.T) {
	stack, base := signedStack(t)

	id := createRun(t, base, "r-signed-cancel", "approvals", script(call("A", "tool_a", `{"n":1}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	produceSignedByERP(t, stack, topics.Decision{Header: topics.Header{RunID: id}, DecisionID: "c-1", Action: topics.ActionCancelRun, DecidedBy: "mallory", Reason: "stop"})
	v := waitDone(t, base, id, 30*time.Second)
	if v.Termination.Reason != pipeline.ReasonCancelled || v.Termination.Detail != "mallory (signed by erp): stop" {
		t.Fatalf("termination %+v, want cancelled by mallory (signed by erp)", v.Termination)
	}
}
