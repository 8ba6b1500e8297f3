package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// requestsConfig is approvalsConfig with producers bound to tenants acme
// and globex, whose run requests and decisions are signed with their keys.
const requestsConfig = approvalsConfig + `decisions:
  producers:
    acme: {key_env: STEPWISE_TEST_ACME_KEY, tenant: acme}
    globex: {key_env: STEPWISE_TEST_GLOBEX_KEY, tenant: globex}
    gateway: {key_env: STEPWISE_TEST_GATEWAY_KEY}
`

// requestStack runs the workers and a gateway on cfg (YAML), the
// producers' keys set.
func requestStack(t *testing.T, cfg string) (*app.Stack, string) {
	t.Helper()
	t.Setenv("STEPWISE_TEST_ACME_KEY", "acme-secret")
	t.Setenv("STEPWISE_TEST_GLOBEX_KEY", "globex-secret")
	t.Setenv("STEPWISE_TEST_GATEWAY_KEY", "gateway-secret")
	stack := connect(t, newInfra(t), parseConfig(t, cfg))
	workers(t, stack)
	return stack, serve(t, stack)
}

// requestRun publishes payload to the run-requests topic, keyed by runID.
func requestRun(t *testing.T, stack *app.Stack, runID, payload string) {
	t.Helper()
	m := message.NewMessage("", []byte(payload))
	m.Metadata.Set(topics.MetadataRunID, runID)
	if err := stack.Publisher.Publish(stack.Names.RunRequests(), m); err != nil {
		t.Fatalf("publish run request %s: %v", runID, err)
	}
}

// signedRequest is req signed by producer (acme or globex), encoded.
func signedRequest(t *testing.T, req topics.RunRequested, producer string) string {
	t.Helper()
	signed, err := topics.Sign(req, producer, []byte(producer+"-secret"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := topics.Encode(signed)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// followRequests collects the run-request-outcomes topic from its start:
// the returned function lists, per run, "outcome" or "outcome code".
func followRequests(t *testing.T, stack *app.Stack) func() map[string][]string {
	t.Helper()
	msgs := subscribeFromStart(t, stack, stack.Names.RunRequestOutcomes())
	var mu sync.Mutex
	seen := map[string][]string{}
	go func() {
		for m := range msgs {
			if o, err := topics.Decode[topics.RunRequestOutcome](m.Payload); err == nil {
				mu.Lock()
				seen[o.RunID] = append(seen[o.RunID], strings.TrimSpace(o.Outcome+" "+o.Code))
				mu.Unlock()
			}
			m.Ack()
		}
	}()
	return func() map[string][]string {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string][]string, len(seen))
		for k, v := range seen {
			out[k] = slices.Clone(v)
		}
		return out
	}
}

// waitOutcomes waits until each run in want has exactly its outcomes.
func waitOutcomes(t *testing.T, outcomes func() map[string][]string, want map[string][]string) {
	t.Helper()
	var got map[string][]string
	testinfra.Eventually(t, 30*time.Second, func() bool {
		got = outcomes()
		for id, w := range want {
			if !slices.Equal(got[id], w) {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("outcomes %v, want %v", got, want) })
}

// A run requested on Kafka is created and finishes; the same record again
// changes nothing and is answered duplicate; a request that cannot become
// a run is answered rejected with the code POST /v1/runs gives; bytes that
// are no request at all are dead-lettered.
func TestRunRequests_a_request_becomes_a_run_once_and_a_bad_one_gets_its_keyed_answer(t *testing.T) {
	stack, base := requestStack(t, requestsConfig)
	outcomes := followRequests(t, stack)
	dead := collect(t, stack, stack.Names.DeadLetter())

	good := `{"v":1,"run_id":"rq-1","agent":"approvals","input":"go","model":` + script(call("A", "echo", `{"n":1}`)) + `}`
	requestRun(t, stack, "rq-1", good)
	waitOutcomes(t, outcomes, map[string][]string{"rq-1": {"created"}})
	if v := waitDone(t, base, "rq-1", 30*time.Second); v.Termination.Reason != pipeline.ReasonNaturalEnd {
		t.Fatalf("run ended %+v", v.Termination)
	}
	requestRun(t, stack, "rq-1", good)
	waitOutcomes(t, outcomes, map[string][]string{"rq-1": {"created", "duplicate"}})
	if created := eventsOf(runEvents(t, stack, "rq-1"), pipeline.EventRunCreated); len(created) != 1 {
		t.Fatalf("%d run.created events, want 1", len(created))
	}

	requestRun(t, stack, "rq-1", `{"run_id":"rq-1","agent":"approvals","input":"another body"}`)
	requestRun(t, stack, "rq-agent", `{"run_id":"rq-agent","agent":"nobody","input":"go"}`)
	requestRun(t, stack, "rq-input", `{"run_id":"rq-input","agent":"approvals","input":5}`)
	requestRun(t, stack, "rq-field", `{"run_id":"rq-field","agent":"approvals","input":"go","colour":"red"}`)
	requestRun(t, stack, "rq-forged", strings.Replace(signedRequest(t, topics.RunRequested{Header: topics.Header{RunID: "rq-forged"},
		Agent: "approvals", Input: json.RawMessage(`"go"`)}, "acme"), `"go"`, `"gone"`, 1))
	waitOutcomes(t, outcomes, map[string][]string{
		"rq-1":      {"created", "duplicate", "rejected conflict"},
		"rq-agent":  {"rejected invalid_request"},
		"rq-input":  {"rejected invalid_request"},
		"rq-field":  {"rejected invalid_request"},
		"rq-forged": {"rejected unauthorized"},
	})
	for _, id := range []string{"rq-agent", "rq-input", "rq-field", "rq-forged"} {
		if _, _, err := stack.Store.RunOwner(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("run %s: %v, want none", id, err)
		}
	}

	requestRun(t, stack, "rq-garbage", `not json`)
	requestRun(t, stack, "rq-no-id", `{"agent":"approvals","input":"go"}`)
	testinfra.Eventually(t, 30*time.Second, func() bool {
		n := 0
		for _, d := range dead() {
			if d.sourceTopic == stack.Names.RunRequests() {
				n++
			}
		}
		return n == 2
	}, func() string { return fmt.Sprintf("dead letters %+v, want the two malformed requests", dead()) })
}

// With signatures required, an unsigned request is rejected as over HTTP
// without a key; a producer bound to a tenant creates its runs in that
// tenant, cannot take another tenant's run id, and cannot decide another
// tenant's run: its decision is rejected as for a run that does not exist.
func TestRunRequests_a_tenant_producer_requests_and_decides_only_its_tenants_runs(t *testing.T) {
	stack, base := requestStack(t, strings.Replace(requestsConfig, "decisions:\n", "decisions:\n  require_signature: true\n", 1))
	outcomes := followRequests(t, stack)
	decisions := followOutcomes(t, stack)

	requestRun(t, stack, "rq-unsigned", `{"run_id":"rq-unsigned","agent":"approvals","input":"go"}`)
	parked := script(call("A", "tool_a", `{"n":1}`))
	requestRun(t, stack, "rq-acme", signedRequest(t, topics.RunRequested{Header: topics.Header{RunID: "rq-acme"},
		Agent: "approvals", Input: json.RawMessage(`"go"`), Model: json.RawMessage(parked)}, "acme"))
	other := createRun(t, base, "rq-default", "approvals", parked) // the default tenant's, over HTTP
	requestRun(t, stack, other, signedRequest(t, topics.RunRequested{Header: topics.Header{RunID: other},
		Agent: "approvals", Input: json.RawMessage(`"go"`), Model: json.RawMessage(parked)}, "acme"))
	waitOutcomes(t, outcomes, map[string][]string{
		"rq-unsigned": {"rejected unauthorized"},
		"rq-acme":     {"created"},
		other:         {"rejected conflict"},
	})
	if tenant, _, err := stack.Store.RunOwner(context.Background(), "rq-acme"); err != nil || tenant != "acme" {
		t.Fatalf("rq-acme's tenant %q, %v; want acme", tenant, err)
	}

	waitFor(t, base, other, "parked", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	waitFor(t, base, "rq-acme", "parked", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	for _, id := range []string{other, "rq-acme"} {
		d, err := topics.Sign(topics.Decision{Header: topics.Header{RunID: id}, DecisionID: "d-" + id, CallID: "A",
			Action: topics.ActionResume, DecidedBy: "acme-bot"}, "acme", []byte("acme-secret"))
		if err != nil {
			t.Fatal(err)
		}
		if err := topics.Publish(stack.Publisher, stack.Names.Decisions(), d); err != nil {
			t.Fatal(err)
		}
	}
	testinfra.Eventually(t, 30*time.Second, func() bool {
		got := decisions()
		return slices.Contains(got, "d-"+other+" rejected run not found") && slices.Contains(got, "d-rq-acme applied ")
	}, func() string { return fmt.Sprintf("decision outcomes %q", decisions()) })
	waitDone(t, base, "rq-acme", 30*time.Second)
	if v := getRun(t, base, other); v.Status != pipeline.RunWaiting || callOf(v, "A").Status != pipeline.CallSuspended {
		t.Fatalf("the other tenant's run is %s, call %s; want it still parked", v.Status, callOf(v, "A").Status)
	}
}

// With room for 3 active runs, 12 requests wait in Kafka and are admitted
// as runs end: Redis never holds more than 3 active runs (sampled while
// they run), and all 12 finish.
func TestRunRequests_admission_keeps_active_runs_under_max_active(t *testing.T) {
	stack, base := requestStack(t, approvalsConfig+"run_requests: {max_active: 3}\n")
	ids := make([]string, 12)
	for i := range ids {
		ids[i] = fmt.Sprintf("rq-adm-%d", i)
		requestRun(t, stack, ids[i], `{"run_id":"`+ids[i]+`","agent":"approvals","input":"go","model":`+
			script(call("S", "sleep", `{"ms":150}`))+`}`)
	}
	most := int64(0)
	testinfra.Eventually(t, 60*time.Second, func() bool {
		c, err := stack.Store.Count(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, c.Active)
		for _, id := range ids {
			if v, ok := runIfAny(t, base, id); !ok || v.Status != pipeline.RunDone {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("not every run is done (most active so far %d)", most) })
	if most > 3 {
		t.Fatalf("%d runs were active at once, want at most 3", most)
	}
}

// A tenant's share bounds its active runs while another tenant's requests,
// on another partition, are still admitted. acme's requests are all on
// partition 0, globex's on partition 1, so neither waits behind the
// other's (a waiting request holds its partition); every run parks, so
// the runs stay active until they are cancelled.
func TestRunRequests_a_tenant_share_bounds_one_tenant_while_another_is_admitted(t *testing.T) {
	stack, base := requestStack(t, requestsConfig+"run_requests: {max_active: 4, tenant_share: 0.5}\n")
	outcomes := followRequests(t, stack)
	parked := json.RawMessage(script(call("A", "tool_a", `{"n":1}`)))
	acme, globex := idsOn(0, "acme", 3), idsOn(1, "globex", 2)
	for _, id := range acme {
		requestRun(t, stack, id, signedRequest(t, topics.RunRequested{Header: topics.Header{RunID: id},
			Agent: "approvals", Input: json.RawMessage(`"go"`), Model: parked, BatchID: "acme-nightly"}, "acme"))
	}
	for _, id := range acme[:2] {
		testinfra.Eventually(t, 30*time.Second, func() bool {
			v, ok := runIfAny(t, base, id)
			return ok && v.Status == pipeline.RunWaiting
		}, func() string { return "run " + id + " is not parked" })
	}
	for _, id := range globex {
		requestRun(t, stack, id, signedRequest(t, topics.RunRequested{Header: topics.Header{RunID: id},
			Agent: "approvals", Input: json.RawMessage(`"go"`), Model: parked}, "globex"))
	}
	waitOutcomes(t, outcomes, map[string][]string{acme[0]: {"created"}, acme[1]: {"created"}, globex[0]: {"created"}, globex[1]: {"created"}})
	if got := outcomes()[acme[2]]; len(got) != 0 {
		t.Fatalf("acme's third request was answered %v while acme held its share", got)
	}
	if _, ok := runIfAny(t, base, acme[2]); ok {
		t.Fatal("acme's third run exists while acme holds its share")
	}
	var batch struct {
		Total int `json:"total"`
	}
	if code := httpDo(t, http.MethodGet, base+"/v1/batches/acme-nightly", nil, &batch); code != http.StatusOK || batch.Total != 2 {
		t.Fatalf("batch while it grows: %d, total %d; want the 2 runs admitted", code, batch.Total)
	}

	if code := httpDo(t, http.MethodPost, base+"/v1/runs/"+acme[0]+"/cancel", map[string]any{}, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	waitOutcomes(t, outcomes, map[string][]string{acme[2]: {"created"}})
	if tenant, _, err := stack.Store.RunOwner(context.Background(), acme[2]); err != nil || tenant != "acme" {
		t.Fatalf("acme's third run: tenant %q, %v", tenant, err)
	}
}

// idsOn returns n run ids starting with prefix whose records land on
// partition p of the test's 4.
func idsOn(p int32, prefix string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if kafka.PartitionOf([]byte(id), 4) == p {
			out = append(out, id)
		}
	}
	return out
}

// runIfAny reads run id; false when it does not exist (yet).
func runIfAny(t *testing.T, base, id string) (runView, bool) {
	t.Helper()
	var v runView
	resp, err := http.Get(base + "/v1/runs/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return v, false
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v, true
}
