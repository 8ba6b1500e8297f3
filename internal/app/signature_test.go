package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/topics"
)

const signedConfig = approvalsConfig + `decisions:
  require_signature: true
  producers:
    erp: {key_env: STEPWISE_TEST_ERP_KEY}
    gateway: {key_env: STEPWISE_TEST_GATEWAY_KEY}
`

// With signatures required: decisions through the gateway are signed by
// it and apply; from Kafka, an unsigned or forged decision is rejected
// (outcome rejected, reason signature) and changes nothing, and one signed
// with the producer's key applies.
func TestSignature_only_signed_decisions_apply(t *testing.T) {
	t.Setenv("STEPWISE_TEST_ERP_KEY", "erp-secret-1")
	t.Setenv("STEPWISE_TEST_GATEWAY_KEY", "gateway-secret-1")
	stack := connect(t, newInfra(t), parseConfig(t, signedConfig))
	workers(t, stack)
	base := serve(t, stack)
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

	good, _ := topics.Sign(topics.Decision{Header: topics.Header{RunID: id}, DecisionID: "g-1", CallID: "A", Action: topics.ActionResume, DecidedBy: "erp"}, "erp", []byte("erp-secret-1"))
	goodRaw, _ := topics.Encode(good)
	kcatProduce(t, stack, stack.Names.Decisions(), id, string(goodRaw))
	decide(t, base, id, map[string]any{"decision_id": "h-1", "call_id": "B", "action": "resume"}) // signed by the gateway
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)
	testinfra.Eventually(t, 20*time.Second, func() bool { got = outcomes(); return len(got) >= 4 },
		func() string { return fmt.Sprintf("outcomes %q", got) })
	if rest := strings.Join(got[2:], "|"); !strings.Contains(rest, "g-1 applied") || !strings.Contains(rest, "h-1 applied") {
		t.Fatalf("outcomes %q", got)
	}
}
