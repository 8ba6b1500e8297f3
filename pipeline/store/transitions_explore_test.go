package store_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// The behavioural check of transitions_test.go: explore drives the store's
// operations from every state they reach and checks every status move
// against pipeline's tables and statusMoves.

// TestTransitions_redis explores steps of one call and of two (a parked call
// before a new one: what a sequential step waits with), the two calls'
// statuses in every combination the operations reach. -short keeps to one
// call.
func TestTransitions_redis(t *testing.T) {
	plans := commitPlans
	if testing.Short() {
		plans = oneCallPlans()
	}
	explore(t, testinfra.RedisServerClient(t), plans)
}

// TestTransitions_miniredis explores steps of one call: the same moves on
// miniredis, in a fraction of the time the two calls' product takes under
// -race (that runs on redis-server).
func TestTransitions_miniredis(t *testing.T) {
	explore(t, testinfra.MiniredisClient(t), oneCallPlans())
}

func oneCallPlans() []commitPlan {
	var plans []commitPlan
	for _, p := range commitPlans {
		if len(p.calls) <= 1 {
			plans = append(plans, p)
		}
	}
	return plans
}

// The run every state holds (or will hold).
const tRun = "r"

// view is a state as its keys hold it, read raw: the statuses are the
// fields the scripts wrote.
type view struct {
	run    map[string]string   // the run hash; nil: no run yet
	calls  []map[string]string // the call hashes of every step so far, in list order
	held   []store.HeldDecision
	stream []redis.XMessage // the run's events, as stored
	lastID string           // the id of the run's last event ("" none)
}

// maxStep is the last step a state can be at: steps are committed at step 0
// only, so EndStep moves a run at most to step 1. maxCalls is the most calls
// a commit plan has; they are c0, c1, ….
const maxStep, maxCalls = 1, 2

// readView reads the state under prefix, whose events up to the last one
// of parent are parent's, and the events after those, in one round trip.
func readView(ctx context.Context, rdb *redis.Client, st *store.Store, prefix string, parent view) (view, []pipeline.Event, error) {
	k := prefix + ":{" + tRun + "}:"
	var run *redis.MapStringStringCmd
	var nheld *redis.IntCmd
	var stream *redis.XMessageSliceCmd
	lists := make([]*redis.StringSliceCmd, maxStep+1)
	calls := map[string]*redis.MapStringStringCmd{}
	start := "-"
	if parent.lastID != "" {
		start = "(" + parent.lastID
	}
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		run = p.HGetAll(ctx, k+"run")
		for i := range lists {
			lists[i] = p.LRange(ctx, fmt.Sprintf("%sstep:%d", k, i), 0, -1)
		}
		for i := range maxCalls {
			id := fmt.Sprintf("c%d", i)
			calls[id] = p.HGetAll(ctx, k+"call:"+id)
		}
		nheld = p.HLen(ctx, k+"held")
		stream = p.XRange(ctx, k+"events", start, "+")
		return nil
	})
	if err != nil {
		return view{}, nil, err
	}
	v := view{lastID: parent.lastID, stream: slices.Clip(parent.stream)}
	if len(run.Val()) > 0 {
		v.run = run.Val()
	}
	if step := v.step(); step > maxStep {
		return view{}, nil, fmt.Errorf("the run is at step %d, past %d", step, maxStep)
	}
	var evs []pipeline.Event
	for _, m := range stream.Val() {
		ev, err := store.DecodeEntry("", m)
		if err != nil {
			return view{}, nil, fmt.Errorf("event %s: %w", m.ID, err)
		}
		evs = append(evs, ev)
		v.stream = append(v.stream, m)
		v.lastID = m.ID
	}
	if v.run["status"] == string(pipeline.RunDone) {
		// An ended run's step lists are gone (lib.lua's retire); its calls
		// stay, in the order of their steps and indexes.
		for i, l := range lists {
			if len(l.Val()) > 0 {
				return view{}, nil, fmt.Errorf("the ended run keeps the list of step %d", i)
			}
		}
		for i := range maxCalls {
			id := fmt.Sprintf("c%d", i)
			if h := calls[id].Val(); len(h) > 0 {
				h["id"] = id // the key names the call; its hash does not
				v.calls = append(v.calls, h)
			}
		}
		slices.SortStableFunc(v.calls, func(a, b map[string]string) int {
			return cmp.Or(cmp.Compare(atoi(a["step"]), atoi(b["step"])), cmp.Compare(atoi(a["idx"]), atoi(b["idx"])))
		})
		return v, evs, v.readHeld(ctx, st, nheld.Val())
	}
	for _, l := range lists {
		for _, id := range l.Val() {
			c, ok := calls[id]
			if !ok || len(c.Val()) == 0 {
				return view{}, nil, fmt.Errorf("call %s is listed but has no record", id)
			}
			h := c.Val()
			h["id"] = id // the key names the call; its hash does not
			v.calls = append(v.calls, h)
		}
	}
	for id, c := range calls {
		if len(c.Val()) > 0 && !slices.ContainsFunc(v.calls, func(h map[string]string) bool { return h["id"] == id }) {
			return view{}, nil, fmt.Errorf("call %s has a record but is on no step's list", id)
		}
	}
	return v, evs, v.readHeld(ctx, st, nheld.Val())
}

// readHeld reads the run's held decisions into v, when it has any (n).
func (v *view) readHeld(ctx context.Context, st *store.Store, n int64) error {
	if n == 0 {
		return nil
	}
	var err error
	v.held, err = st.HeldDecisions(ctx, tRun)
	return err
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// statuses maps "run" and "call <id>" to their statuses.
func (v view) statuses() map[string]string {
	out := map[string]string{}
	if v.run != nil {
		out["run"] = v.run["status"]
	}
	for _, c := range v.calls {
		out["call "+c["id"]] = c["status"]
	}
	return out
}

// cells are the pairs of run status × call status the state holds.
func (v view) cells() []string {
	if v.run == nil {
		return nil
	}
	out := []string{v.run["status"] + "×none"}
	for _, c := range v.current() {
		out = append(out, v.run["status"]+"×"+c["status"])
	}
	return out
}

func (v view) step() int {
	if v.run == nil {
		return 0
	}
	n, _ := strconv.Atoi(v.run["step"])
	return n
}

func (v view) stepOwner() string {
	if v.run == nil || v.run["lease_owner"] == "" {
		return "w1"
	}
	return v.run["lease_owner"]
}

// current is the calls of the run's current step.
func (v view) current() []map[string]string {
	var out []map[string]string
	for _, c := range v.calls {
		if c["step"] == strconv.Itoa(v.step()) {
			out = append(out, c)
		}
	}
	return out
}

// key is what decides the statuses the operations can reach from the
// state: the run's status, step and step state, and its current calls'
// statuses, a parked call's with its resume mode, a call that may still
// park or is parked with whether a decision is held for it. Earlier steps'
// calls are terminal; a decision held for a call that is resuming or
// terminal can only be rejected. Leases are left out: the operations that
// take one over come in a variant an hour later, when every lease has
// expired.
func (v view) key() string {
	if v.run == nil {
		return "no run"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "run %s/%s@%s", v.run["status"], v.run["step_state"], v.run["step"])
	for _, c := range v.current() {
		st := c["status"]
		b.WriteString(" " + st)
		if st == string(pipeline.CallSuspended) {
			b.WriteString("(" + c["resume_mode"] + ")")
		}
		if st == string(pipeline.CallNew) || st == string(pipeline.CallRunning) || st == string(pipeline.CallSuspended) {
			for _, h := range v.held {
				if h.CallID == c["id"] {
					b.WriteString("+held")
				}
			}
		}
	}
	return b.String()
}

// transOp is one store operation as the exploration drives it.
type transOp struct {
	name   string
	script string // the script it runs: its moves must be declared for it
	late   bool   // it runs an hour after the state's clock, when every lease has expired
	do     func(c opEnv) error
}

type opEnv struct {
	ctx context.Context
	st  *store.Store
	now time.Time
	tag string // unique along a path, for decision ids
}

func (c opEnv) lease(owner string) store.Lease { return lease(owner, c.now.Add(30*time.Second)) }

// commitPlans are the steps a step worker may commit: no calls, one call in
// each status ToolGate leaves a call in (suspended in each resume mode), and
// a parked call before a new one (what a sequential step waits with). Their
// calls are c0, c1, ….
var commitPlans = []commitPlan{
	{"no calls", nil},
	{"new", []pipeline.ToolCall{{Status: pipeline.CallNew, Gate: pipeline.GateAllow}}},
	{"suspended replay", []pipeline.ToolCall{suspendedAs(pipeline.ResumeReplay)}},
	{"suspended use_decision_as_result", []pipeline.ToolCall{suspendedAs(pipeline.ResumeUseDecisionAsResult)}},
	{"suspended pass_decision_to_tool", []pipeline.ToolCall{suspendedAs(pipeline.ResumePassDecisionToTool)}},
	{"succeeded", []pipeline.ToolCall{{Status: pipeline.CallSucceeded, Gate: pipeline.GateSetResult, Result: json.RawMessage(`{"set":true}`)}}},
	{"failed", []pipeline.ToolCall{{Status: pipeline.CallFailed, Gate: pipeline.GateBlock, Error: "denied"}}},
	{"cancelled", []pipeline.ToolCall{{Status: pipeline.CallCancelled, Error: "cancelled after a block"}}},
	{"suspended replay, new", []pipeline.ToolCall{suspendedAs(pipeline.ResumeReplay), {Status: pipeline.CallNew, Gate: pipeline.GateAllow}}},
}

type commitPlan struct {
	name  string
	calls []pipeline.ToolCall // status, gate, parking, result, error
}

func suspendedAs(mode pipeline.ResumeMode) pipeline.ToolCall {
	return pipeline.ToolCall{Status: pipeline.CallSuspended, Gate: pipeline.GateSuspend, Parking: parking(mode)}
}

func planCommit(calls []pipeline.ToolCall) store.StepCommit {
	ids := make([]string, len(calls))
	for i := range calls {
		ids[i] = fmt.Sprintf("c%d", i)
	}
	c := commitOf(ids...)
	for i, p := range calls {
		c.Calls[i].Status, c.Calls[i].Gate, c.Calls[i].Result, c.Calls[i].Error = p.Status, p.Gate, p.Result, p.Error
		if p.Parking != nil {
			park := *p.Parking
			c.Calls[i].Parking = &park
		}
	}
	return c
}

// opsFor is every operation that runs a script, in its variants, on the
// state v: the run's operations on its current step (each commit plan at
// step 0), the call operations on each call of that step and the held
// decisions' on each. Steps are committed at step 0 only: a later step
// runs the same scripts from the same states.
func opsFor(v view, plans []commitPlan) []transOp {
	step, owner := v.step(), v.stepOwner()
	ops := []transOp{
		{"CreateRun", "create_run.lua", false, func(c opEnv) error {
			_, _, err := c.st.CreateRun(c.ctx, newRun(tRun), input, c.now)
			return err
		}},
		{"ClaimStep", "claim_step.lua", false, func(c opEnv) error {
			_, err := c.st.ClaimStep(c.ctx, tRun, step, c.lease("w1"), c.now)
			return err
		}},
		{"ClaimStep by w2 after the lease expired", "claim_step.lua", true, func(c opEnv) error {
			_, err := c.st.ClaimStep(c.ctx, tRun, step, c.lease("w2"), c.now)
			return err
		}},
		{"RenewStepLease", "renew_step_lease.lua", false, func(c opEnv) error {
			return c.st.RenewStepLease(c.ctx, tRun, step, c.lease(owner))
		}},
		{"AppendDelta", "append_delta.lua", false, func(c opEnv) error {
			return c.st.AppendDelta(c.ctx, tRun, step, owner, "hm", c.now)
		}},
		{"EndStep", "end_step.lua", false, func(c opEnv) error {
			_, _, err := c.st.EndStep(c.ctx, tRun, step, store.StepEnd{}, c.now)
			return err
		}},
		{"EndStep natural_end", "end_step.lua", false, func(c opEnv) error {
			_, _, err := c.st.EndStep(c.ctx, tRun, step, store.StepEnd{Finish: &pipeline.Termination{Reason: pipeline.ReasonNaturalEnd}}, c.now)
			return err
		}},
		{"FinishRun error", "finish_run.lua", false, func(c opEnv) error {
			_, err := c.st.FinishRun(c.ctx, tRun, pipeline.Termination{Reason: pipeline.ReasonError, Detail: "boom"}, c.now)
			return err
		}},
		{"SetWaiting", "set_waiting.lua", false, func(c opEnv) error {
			_, err := c.st.SetWaiting(c.ctx, tRun, step, false, c.now)
			return err
		}},
		{"SetWaiting sequential", "set_waiting.lua", false, func(c opEnv) error {
			_, err := c.st.SetWaiting(c.ctx, tRun, step, true, c.now)
			return err
		}},
		{"CancelRun", "cancel_run.lua", false, func(c opEnv) error {
			_, err := c.st.CancelRun(c.ctx, tRun, "", "ops", "test", c.now)
			return err
		}},
	}
	if step == 0 {
		for _, p := range plans {
			ops = append(ops, transOp{"CommitStep " + p.name, "commit_step.lua", false, func(c opEnv) error {
				_, _, err := c.st.CommitStep(c.ctx, tRun, 0, owner, planCommit(p.calls), c.now)
				return err
			}})
		}
	}
	for _, h := range v.held {
		ops = append(ops,
			transOp{"ApplyDecision held for " + h.CallID, "apply_decision.lua", false, func(c opEnv) error {
				_, err := c.st.ApplyDecision(c.ctx, tRun, h.Decision, h.Until, c.now)
				return err
			}},
			transOp{"DropHeld for " + h.CallID, "drop_held.lua", false, func(c opEnv) error {
				return c.st.DropHeld(c.ctx, tRun, h.CallID, h.ID, "did not park", c.now)
			}})
	}
	for _, call := range v.current() {
		id, callOwner := call["id"], call["lease_owner"]
		if callOwner == "" {
			callOwner = "t1"
		}
		ops = append(ops,
			transOp{"ClaimCall " + id, "claim_call.lua", false, func(c opEnv) error {
				_, err := c.st.ClaimCall(c.ctx, tRun, id, c.lease("t1"), c.now)
				return err
			}},
			transOp{"ClaimCall " + id + " by t2 after the lease expired", "claim_call.lua", true, func(c opEnv) error {
				_, err := c.st.ClaimCall(c.ctx, tRun, id, c.lease("t2"), c.now)
				return err
			}},
			transOp{"RenewCallLease " + id, "renew_call_lease.lua", false, func(c opEnv) error {
				return c.st.RenewCallLease(c.ctx, tRun, id, c.lease(callOwner))
			}})
		// A tool that returns pending parks its call for replay: the parked
		// states of the other modes come from commits.
		for _, o := range []store.CallOutcome{
			{Status: pipeline.CallSucceeded, Result: json.RawMessage(`{"ok":true}`)},
			{Status: pipeline.CallFailed, Error: "boom"},
			{Status: pipeline.CallSuspended, Parking: parking(pipeline.ResumeReplay)},
		} {
			ops = append(ops, transOp{"FinishCall " + id + " " + string(o.Status), "finish_call.lua", false, func(c opEnv) error {
				_, err := c.st.FinishCall(c.ctx, tRun, id, callOwner, o, c.now)
				return err
			}})
		}
		// A resume carries a payload: pass_decision_to_tool needs one, the
		// other modes take it or leave it.
		for _, d := range []store.Decision{
			{CallID: id, Action: store.ActionResume, DecidedBy: "alice", Payload: json.RawMessage(`{"approved":true}`)},
			{CallID: id, Action: store.ActionCancel, DecidedBy: "bob"},
		} {
			name := "ApplyDecision " + d.Action + " " + id
			if d.Payload != nil {
				name += " with a payload"
			}
			ops = append(ops, transOp{name, "apply_decision.lua", false, func(c opEnv) error {
				d := d
				d.ID = "d" + c.tag
				_, err := c.st.ApplyDecision(c.ctx, tRun, d, c.now.Add(time.Minute), c.now)
				return err
			}})
		}
	}
	return ops
}

// node is a reachable state, kept in keys of its own prefix.
type node struct {
	prefix string
	clock  time.Time // when it was reached; the next operation runs a second later
	path   []string  // the operations that reached it
	v      view
}

// move is one status change an operation made.
type move struct {
	script, kind, from, to string
}

func (m move) String() string { return fmt.Sprintf("%s %s→%s", m.kind, m.from, m.to) }

// outcome is what one operation did from one state.
type outcome struct {
	child    *node
	moves    []move
	problems []string
}

// explorer forks states into fresh key prefixes on one Redis.
type explorer struct {
	rdb *redis.Client
	n   atomic.Int64
}

func (e *explorer) prefix() string { return fmt.Sprintf("tr%d", e.n.Add(1)) }

// keysOf names the keys a state may hold under prefix (keys.go): the
// run's, its steps' and calls', and the global indexes. A scan (KEYS) would
// cost the whole keyspace per fork.
func keysOf(prefix string, v view) []string {
	run := prefix + ":{" + tRun + "}:"
	keys := []string{prefix + ":runs", prefix + ":active", prefix + ":pending"}
	for _, k := range []string{"run", "msgs", "events", "state", "decisions", "held"} {
		keys = append(keys, run+k)
	}
	for step := 0; step <= maxStep; step++ {
		keys = append(keys, fmt.Sprintf("%sstep:%d", run, step))
	}
	for _, c := range v.calls {
		keys = append(keys, run+"call:"+c["id"])
	}
	return keys
}

// fork copies n's keys into a fresh prefix. The event stream is written
// entry by entry, with its ids: miniredis's COPY of a stream shares its
// entries with the original, so two copies would append into each other.
func (e *explorer) fork(ctx context.Context, n *node) (string, error) {
	to := e.prefix()
	events := n.prefix + ":{" + tRun + "}:events"
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keysOf(n.prefix, n.v) {
			if k != events {
				p.Copy(ctx, k, to+strings.TrimPrefix(k, n.prefix), 0, false)
			}
		}
		for _, m := range n.v.stream {
			p.XAdd(ctx, &redis.XAddArgs{Stream: to + strings.TrimPrefix(events, n.prefix), ID: m.ID, Values: m.Values})
		}
		return nil
	})
	return to, err
}

// drop deletes the keys of nodes no longer needed.
func (e *explorer) drop(ctx context.Context, nodes []*node) {
	_, _ = e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, n := range nodes {
			p.Del(ctx, keysOf(n.prefix, n.v)...)
		}
		return nil
	})
}

// step runs op on a copy of n and checks what it did.
func (e *explorer) step(ctx context.Context, n *node, op transOp) outcome {
	path := append(slices.Clone(n.path), op.name)
	fail := func(format string, args ...any) outcome {
		return outcome{problems: []string{fmt.Sprintf(format, args...) + "; after " + strings.Join(path, ", ")}}
	}
	prefix, err := e.fork(ctx, n)
	if err != nil {
		return fail("fork: %v", err)
	}
	st := store.New(e.rdb, store.WithPrefix(prefix))
	now := n.clock.Add(time.Second)
	if op.late {
		now = n.clock.Add(time.Hour)
	}
	opErr := op.do(opEnv{ctx: ctx, st: st, now: now, tag: fmt.Sprint(len(n.path))})
	after, evs, err := readView(ctx, e.rdb, st, prefix, n.v)
	if err != nil {
		return fail("read the state: %v", err)
	}
	out := outcome{child: &node{prefix: prefix, clock: now, path: path, v: after}}
	if opErr != nil && !isRefusal(opErr) {
		out.problems = append(out.problems, fmt.Sprintf("%s (%s) failed with %v, not a refusal; after %s",
			op.name, op.script, opErr, strings.Join(path, ", ")))
	}
	moves, problems := movesOf(n.v.statuses(), after.statuses(), evs)
	for _, p := range problems {
		out.problems = append(out.problems, fmt.Sprintf("%s (%s): %s; after %s", op.name, op.script, p, strings.Join(path, ", ")))
	}
	for _, m := range moves {
		m.script = op.script
		out.moves = append(out.moves, m)
		if !allowedMove(m.kind, m.from, m.to) {
			out.problems = append(out.problems, fmt.Sprintf("%s (%s) moved a %s, which pipeline's table refuses; after %s",
				op.name, op.script, m, strings.Join(path, ", ")))
		}
		if !slices.Contains(declaredMoves(op.script, m.kind), m.from+"→"+m.to) {
			out.problems = append(out.problems, fmt.Sprintf("%s (%s) moved a %s, which statusMoves does not declare for %s; after %s",
				op.name, op.script, m, op.script, strings.Join(path, ", ")))
		}
	}
	return out
}

func declaredMoves(script, kind string) []string {
	if kind == "run" {
		return statusMoves[script].run
	}
	return statusMoves[script].call
}

func isRefusal(err error) bool {
	for _, s := range []error{store.ErrNotFound, store.ErrConflict, store.ErrStale, store.ErrLeaseHeld, store.ErrLeaseLost, store.ErrInvalid} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// movesOf reads the moves from the statuses before, the events appended and
// the statuses after: each record's path starts at its status before (""
// when it did not exist), goes through every status an event records for
// it and must end at its status after.
func movesOf(before, after map[string]string, evs []pipeline.Event) ([]move, []string) {
	paths := map[string][]string{}
	for k, st := range before {
		paths[k] = []string{st}
	}
	var problems []string
	for _, ev := range evs {
		k, st, err := eventStatus(ev)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if k == "" {
			continue
		}
		if _, ok := paths[k]; !ok {
			paths[k] = []string{""}
		}
		paths[k] = append(paths[k], st)
	}
	for k := range after {
		if _, ok := paths[k]; !ok {
			paths[k] = []string{""}
		}
	}
	var moves []move
	for _, k := range slices.Sorted(maps.Keys(paths)) {
		p := slices.Compact(paths[k])
		if last := p[len(p)-1]; last != after[k] {
			problems = append(problems, fmt.Sprintf("%s is stored %q, but its events end at %q (a status change without its event)", k, after[k], last))
		}
		kind, _, _ := strings.Cut(k, " ")
		for i := 1; i < len(p); i++ {
			moves = append(moves, move{kind: kind, from: p[i-1], to: p[i]})
		}
	}
	return moves, problems
}

// eventStatus is the record an event moves and the status it records for
// it; "" for an event that records no status.
func eventStatus(ev pipeline.Event) (string, string, error) {
	var data struct {
		Status pipeline.ToolCallStatus    `json:"status"`
		Reason pipeline.TerminationReason `json:"reason"`
	}
	switch ev.Type {
	case pipeline.EventRunFinished, pipeline.EventToolCallCreated, pipeline.EventToolCallFinished, pipeline.EventDecisionApplied:
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			return "", "", fmt.Errorf("event %s: %v", ev.Type, err)
		}
	}
	switch ev.Type {
	case pipeline.EventRunCreated:
		return "run", string(pipeline.RunCreated), nil
	case pipeline.EventRunStarted, pipeline.EventRunResumed:
		return "run", string(pipeline.RunRunning), nil
	case pipeline.EventRunFinished:
		return "run", string(data.Reason.RunStatus()), nil
	case pipeline.EventToolCallStarted, pipeline.EventToolCallRetried:
		return "call " + ev.CallID, string(pipeline.CallRunning), nil
	case pipeline.EventToolCallParked:
		return "call " + ev.CallID, string(pipeline.CallSuspended), nil
	case pipeline.EventToolCallCreated, pipeline.EventToolCallFinished, pipeline.EventDecisionApplied:
		if data.Status == "" {
			return "", "", fmt.Errorf("event %s of call %s records no status", ev.Type, ev.CallID)
		}
		return "call " + ev.CallID, string(data.Status), nil
	}
	return "", "", nil
}

// explore drives every operation from every reachable state, breadth first,
// and checks each step (see the comment at the top of this file).
func explore(t *testing.T, rdb *redis.Client, plans []commitPlan) {
	ctx := context.Background()
	e := &explorer{rdb: rdb}
	root := &node{prefix: e.prefix(), clock: t0}
	seen := map[string]bool{root.v.key(): true}
	observed := map[move]bool{}
	problems := map[string]bool{}
	cells := map[string]bool{}
	var report []string
	frontier := []*node{root}
	states, steps := 1, 0
	const maxStates = 5000 // far above the few hundred the key allows; more means it bounds nothing
	for depth := 0; len(frontier) > 0; depth++ {
		type task struct {
			n  *node
			op transOp
		}
		var tasks []task
		for _, n := range frontier {
			for _, op := range opsFor(n.v, plans) {
				tasks = append(tasks, task{n, op})
			}
		}
		outs := make([]outcome, len(tasks))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i, tk := range tasks {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				outs[i] = e.step(ctx, tk.n, tk.op)
			}()
		}
		wg.Wait()
		steps += len(tasks)
		var next, dropped []*node
		for _, out := range outs {
			for _, m := range out.moves {
				observed[m] = true
			}
			for _, p := range out.problems {
				// One report per problem, with the shortest path that shows it.
				head, _, _ := strings.Cut(p, "; after ")
				if !problems[head] {
					problems[head] = true
					report = append(report, p)
				}
			}
			if out.child == nil {
				continue
			}
			if k := out.child.v.key(); !seen[k] {
				seen[k] = true
				next = append(next, out.child)
				for _, cell := range out.child.v.cells() {
					cells[cell] = true
				}
				continue
			}
			dropped = append(dropped, out.child)
		}
		e.drop(ctx, append(dropped, frontier...))
		frontier = next
		states += len(next)
		if states > maxStates {
			t.Fatalf("more than %d states at depth %d: the state key no longer bounds the exploration", maxStates, depth)
		}
	}
	t.Logf("%d states, %d operations driven", states, steps)
	for _, p := range report {
		t.Error(p)
	}
	// Every declared move was made, so no declaration claims more than the
	// scripts do or covers moves the exploration cannot reach.
	for _, name := range slices.Sorted(maps.Keys(statusMoves)) {
		if _, err := os.Stat(filepath.Join("scripts", name)); err != nil {
			continue
		}
		w := statusMoves[name]
		for kind, moves := range map[string][]string{"run": w.run, "call": w.call} {
			for _, m := range moves {
				from, to, _ := strings.Cut(m, "→")
				if !observed[move{script: name, kind: kind, from: from, to: to}] {
					t.Errorf("%s declares the %s move %s, but no operation made it from any reachable state", name, kind, m)
				}
			}
		}
	}
	t.Logf("run status × call status started from: %s", strings.Join(slices.Sorted(maps.Keys(cells)), ", "))
}
