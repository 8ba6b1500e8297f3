package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

func TestStore_redis(t *testing.T) {
	runContract(t, func(t testing.TB) redis.UniversalClient { return testinfra.RedisServerClient(t) })
}

func TestStore_miniredis(t *testing.T) {
	runContract(t, func(t testing.TB) redis.UniversalClient { return testinfra.MiniredisClient(t) })
}

// A cluster of three primaries: every case's run keys and the global
// indexes land on different nodes, so a script or pipeline that mixed
// slots would fail here with CROSSSLOT.
func TestStore_cluster(t *testing.T) {
	runContract(t, func(t testing.TB) redis.UniversalClient { return testinfra.RedisCluster(t, 3, 0).Client() })
}

// contractCase is one behaviour every Redis the store runs on must show.
type contractCase struct {
	name string
	run  func(t *testing.T, f *fixture)
}

// runContract runs the store's contract against one server from newClient.
// Each case gets a store with a key prefix of its own, so cases run in
// parallel on the one server.
func runContract(t *testing.T, newClient func(t testing.TB) redis.UniversalClient) {
	rdb := newClient(t)
	var cases []contractCase
	for _, group := range [][]contractCase{runCases, stepCases, stateCases, outboxCases, callCases, fanInCases, endCases, replyCases, markCases, eventCases, listCases, sweepCases,
		gateCases, decisionCases, cancelCases, pendingCases, tenantIndexCases, reconcileCases, retentionCases, tenantCases, resumeCheckCases, outcomeCases, approvalCases, claimMessagesCases, threadCases, deferCases, budgetCases, siblingCases, admissionCases, handoffCases, scheduleCases, searchCases, keepCases, powersCases, inferenceCases} {
		cases = append(cases, group...)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			prefix := fmt.Sprintf("test%d", i)
			c.run(t, &fixture{
				st:     store.New(rdb, store.WithPrefix(prefix)),
				rdb:    rdb,
				prefix: prefix,
				ctx:    context.Background(),
			})
		})
	}
}

// t0 is the clock of every case; at(s) is s seconds later. No case sleeps:
// leases expire because the cases pass a later now.
var t0 = time.UnixMilli(1_700_000_000_000).UTC()

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func lease(owner string, until time.Time) store.Lease { return store.Lease{Owner: owner, Until: until} }

type fixture struct {
	st     *store.Store
	rdb    redis.UniversalClient
	prefix string // of st's keys, unique to the case
	ctx    context.Context
}

func newRun(id string) pipeline.Run {
	return pipeline.Run{ID: id, Agent: "assistant", RequestHash: "hash-" + id, Metadata: json.RawMessage(`{"k":"v"}`)}
}

var input = []pipeline.Message{{Role: pipeline.RoleUser, Content: "hello"}}

// created creates run id at t0.
func (f *fixture) created(t *testing.T, id string) pipeline.Run {
	t.Helper()
	run, ok, err := f.st.CreateRun(f.ctx, newRun(id), input, t0)
	if err != nil || !ok {
		t.Fatalf("CreateRun(%s) = %v, %v", id, ok, err)
	}
	return run
}

// claimed creates run id and has w1 claim step 0 at 1s, lease until 30s.
func (f *fixture) claimed(t *testing.T, id string) pipeline.Run {
	t.Helper()
	f.created(t, id)
	run, err := f.st.ClaimStep(f.ctx, id, 0, lease("w1", at(30)), at(1))
	if err != nil {
		t.Fatalf("ClaimStep: %v", err)
	}
	return run
}

// commit has owner commit step with one call per id.
func (f *fixture) commit(t *testing.T, id string, step int, owner string, callIDs ...string) (pipeline.Run, []pipeline.ToolCall) {
	t.Helper()
	run, calls, err := f.st.CommitStep(f.ctx, id, step, owner, commitOf(callIDs...), at(2))
	if err != nil {
		t.Fatalf("CommitStep(step %d): %v", step, err)
	}
	return run, calls
}

// committed creates run id, claims step 0 and commits calls with callIDs.
func (f *fixture) committed(t *testing.T, id string, callIDs ...string) (pipeline.Run, []pipeline.ToolCall) {
	t.Helper()
	f.claimed(t, id)
	return f.commit(t, id, 0, "w1", callIDs...)
}

func commitOf(callIDs ...string) store.StepCommit {
	c := store.StepCommit{
		Assistant: pipeline.Message{Role: pipeline.RoleAssistant, Content: "let me look"},
		Usage:     pipeline.Usage{InputTokens: 10, OutputTokens: 3},
	}
	for i, id := range callIDs {
		args := json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
		c.Assistant.ToolCalls = append(c.Assistant.ToolCalls, pipeline.ToolCallRequest{ID: id, Name: "echo", Arguments: args})
		c.Calls = append(c.Calls, pipeline.ToolCall{ID: id, Index: i, Tool: "echo", Arguments: args})
	}
	return c
}

// done claims and finishes a call as succeeded.
func (f *fixture) done(t *testing.T, runID, callID string) pipeline.ToolCall {
	t.Helper()
	if _, err := f.st.ClaimCall(f.ctx, runID, callID, lease("t1", at(60)), at(3)); err != nil {
		t.Fatalf("ClaimCall(%s): %v", callID, err)
	}
	fin, err := f.st.FinishCall(f.ctx, runID, callID, "t1",
		store.CallOutcome{Status: pipeline.CallSucceeded, Result: json.RawMessage(`{"ok":true}`)}, at(4))
	if err != nil {
		t.Fatalf("FinishCall(%s): %v", callID, err)
	}
	return fin.Call
}

func (f *fixture) events(t *testing.T, runID string) []pipeline.Event {
	t.Helper()
	evs, err := f.st.Events(f.ctx, runID, "", 0)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	return evs
}

func (f *fixture) eventTypes(t *testing.T, runID string) []pipeline.EventType {
	t.Helper()
	var out []pipeline.EventType
	for _, ev := range f.events(t, runID) {
		out = append(out, ev.Type)
	}
	return out
}

// noEventsFrom runs refuse and checks that it appended no event.
func (f *fixture) noEventsFrom(t *testing.T, runID string, refuse func()) {
	t.Helper()
	before := f.events(t, runID)
	refuse()
	if after := f.events(t, runID); len(after) != len(before) {
		t.Fatalf("a refused transition appended events: %v", typesOf(after[len(before):]))
	}
}

func (f *fixture) run(t *testing.T, id string) pipeline.Run {
	t.Helper()
	run, err := f.st.GetRun(f.ctx, id)
	if err != nil {
		t.Fatalf("GetRun(%s): %v", id, err)
	}
	return run
}

func typesOf(evs []pipeline.Event) []pipeline.EventType {
	var out []pipeline.EventType
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}

func wantTypes(t *testing.T, got []pipeline.EventType, want ...pipeline.EventType) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

// wantJSON compares raw JSON by meaning (key order differs between servers
// only if the store let Lua build JSON; it must not, but compare robustly).
func wantJSON(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("JSON = %s, want %s", gb, wb)
	}
}
