package pipelinetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/model/script"
	"github.com/stepwise-run/stepwise/pipeline/stepworker"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/toolworker"
	"github.com/stepwise-run/stepwise/topics"
)

// Side names the worker a crash hits.
type Side int

// The sides.
const (
	None Side = iota
	StepWorker
	ToolWorker
	Gateway
)

func (s Side) String() string { return [...]string{"none", "stepworker", "toolworker", "gateway"}[s] }

// Scenario is one run to drive: the configuration, the run's agent and
// script model, and optionally a decision sent to it (Early: before its
// first step, so it is held until the call parks; else once the run waits).
type Scenario struct {
	Name     string
	Config   string
	Agent    string
	Script   string
	Decision *topics.Decision
	Early    bool
}

// RunID is the id of every scenario's run.
const RunID = "r1"

// Harness drives a scenario many times on one Redis, each time under a
// key prefix of its own.
type Harness struct {
	t     *testing.T
	sc    Scenario
	cfg   *config.Config
	url   string
	names topics.Names
	n     int
}

// New returns a harness for sc on a Redis private to t.
func New(t *testing.T, sc Scenario) *Harness {
	t.Helper()
	cfg, err := config.Parse([]byte(sc.Config))
	if err != nil {
		t.Fatalf("scenario %s: config: %v", sc.Name, err)
	}
	return &Harness{t: t, sc: sc, cfg: cfg, url: testinfra.Redis(t), names: topics.NewNames("")}
}

// Undisturbed drives the scenario with no crash.
func (h *Harness) Undisturbed() Outcome {
	out, _ := h.drive(None, &Injector{}, inOrder)
	return out
}

// Disordered drives the scenario with no crash but every message delivered
// twice in a row, or with the newest undelivered message always delivered
// first (the reverse of the order it was published in).
func (h *Harness) Disordered(o Order) Outcome {
	out, _ := h.drive(None, &Injector{}, o)
	return out
}

// Order is how the bus delivers.
type Order int

// The orders.
const (
	inOrder     Order = iota
	Twice             // every message delivered twice in a row
	NewestFirst       // the newest undelivered message first
)

// Crash drives the scenario with side crashing at its n-th operation
// (Redis command or publish), then replaced. cut is false when side made
// fewer than n operations: n is past the last cut point.
func (h *Harness) Crash(side Side, n int) (out Outcome, cut bool) {
	return h.drive(side, &Injector{At: n}, inOrder)
}

// Fail drives the scenario with side's n-th operation failing once (a
// transient fault), side going on as its code does. failed is false when
// side made fewer than n operations.
func (h *Harness) Fail(side Side, n int) (out Outcome, failed bool) {
	return h.drive(side, &Injector{At: n, Transient: true}, inOrder)
}

// Outcome is what a driven run came to.
type Outcome struct {
	Run      pipeline.Run
	Messages []pipeline.Message
	Commits  map[string]int     // events that commit something, by "type step call"
	Results  []topics.RunResult // every RunResult published for the run
	// Outcomes are the decision outcomes published, "<decision id>
	// <outcome>", each once, sorted. A timeout's id is written without its
	// parking's time (timeout:<call>@…): a crash may park the call later
	// than an undisturbed run does.
	Outcomes []string
	// Holds are the budget holds left in the budgets once the run is
	// published: "<budget key> <field>", sorted.
	Holds []string
	// RunEnds is how many times the probe plugin's RunEnd hook succeeded
	// before a result of the run was published.
	RunEnds int
	Ops     int // operations of the side that crashed (or would have)
	// Kept is where the run is kept once a sweep has passed after it was
	// published: the global indexes that hold it, and "expiring" when
	// every key of the run has a time to live (the retention).
	Kept string
	// Children are the run's child runs as they ended: "<id> <status>
	// <termination reason> <conversation JSON>", sorted.
	Children []string
}

// retention is the drives' runs.retention: long, so nothing expires while
// a drive runs, but set, so the run's retirement is checked.
const retention = time.Hour

// driver is one drive of the scenario.
type driver struct {
	*Harness
	ctx      context.Context
	clock    *clock
	bus      *Bus
	observer *store.Store
	rdb      *redis.Client // the observer's
	side     Side
	inj      *Injector
	steps    *stepworker.Worker
	tools    *toolworker.Worker
	workers  int
	decided  bool
	runEnds  atomic.Int32
}

// maxRounds bounds the idle rounds (clock forward, sweep) of one drive,
// and maxDeliveries its deliveries: a run still not done then is stuck.
const (
	maxRounds     = 60
	maxDeliveries = 2000
)

func (h *Harness) drive(side Side, inj *Injector, order Order) (Outcome, bool) {
	t := h.t
	t.Helper()
	h.n++
	n := inj.At
	d := &driver{
		Harness: h, ctx: context.Background(), clock: &clock{now: time.UnixMilli(1_750_000_000_000)},
		bus: &Bus{}, side: side, inj: inj,
	}
	prefix := fmt.Sprintf("pt%d", h.n)
	d.rdb = d.client(nil)
	d.observer = store.New(d.rdb, store.WithPrefix(prefix), store.WithRetention(retention))
	d.steps = d.stepWorker(prefix, side == StepWorker)
	d.tools = d.toolWorker(prefix, side == ToolWorker)

	d.create(prefix)
	if d.sc.Decision != nil && d.sc.Early {
		// Before step 0 runs, whatever the order of the rest: the
		// decision is held until its call parks.
		d.decide()
		e, _ := d.bus.next(true)
		d.deliver(e, prefix)
		if order == Twice {
			d.deliver(e, prefix)
		}
	}
	deliveries := 0
	for round := 0; ; round++ {
		for e, ok := d.bus.next(order == NewestFirst); ok; e, ok = d.bus.next(order == NewestFirst) {
			if deliveries++; deliveries > maxDeliveries {
				t.Fatalf("%s, %s crashing at %d: more than %d deliveries; the run never settles", d.sc.Name, side, n, maxDeliveries)
			}
			d.deliver(e, prefix)
			if order == Twice {
				d.deliver(e, prefix)
			}
		}
		snap, err := d.observer.Snapshot(d.ctx, RunID, 0, time.Now())
		if err != nil {
			t.Fatalf("%s: snapshot: %v", d.sc.Name, err)
		}
		if snap.Run.Status.Final() && snap.Run.Published {
			break
		}
		if round >= maxRounds {
			t.Fatalf("%s, %s crashing at %d: the run is stuck: %+v, calls %+v", d.sc.Name, side, n, snap.Run, snap.Calls)
		}
		if d.sc.Decision != nil && !d.decided && snap.Run.Status == pipeline.RunWaiting {
			d.listed(prefix, snap)
			d.decide()
			continue
		}
		// Nothing in flight: let the leases of a dead worker run out and
		// the sweeper look, as time would.
		d.clock.advance(d.cfg.StepWorker.Lease.Duration + time.Second)
		if _, err := d.steps.Sweep(d.ctx); err != nil && !d.faulted(StepWorker) {
			t.Fatalf("%s: sweep: %v", d.sc.Name, err)
		}
		d.settle(prefix)
	}
	// What a crash after the result's publish left undone (its retirement)
	// is the sweeper's: let it look, twice in case it crashes itself.
	for range 2 {
		d.clock.advance(d.cfg.StepWorker.Lease.Duration + time.Second)
		if _, err := d.steps.Sweep(d.ctx); err != nil && !d.faulted(StepWorker) {
			t.Fatalf("%s: sweep: %v", d.sc.Name, err)
		}
		d.settle(prefix)
	}
	return d.outcome(prefix), d.inj.Hit()
}

// listed checks that whoever decides finds the waiting run's parked calls
// where a person or a system looks for them, GET /v1/pending (the
// store's ListPending, for every tenant and for the run's), by the next
// look of the sweeper at the latest: a crash between the write that
// parked a call and the write that indexed it must not hide the call.
func (d *driver) listed(prefix string, snap store.Snapshot) {
	t := d.t
	t.Helper()
	missing := func() []string {
		var out []string
		for _, f := range []store.PendingFilter{{}, {Tenant: snap.Run.Tenant}} {
			pending, err := d.observer.ListPending(d.ctx, f)
			if err != nil {
				t.Fatalf("%s: list pending: %v", d.sc.Name, err)
			}
			seen := map[string]bool{}
			for _, p := range pending {
				seen[p.Call.ID] = true
			}
			for _, c := range snap.Calls {
				if c.Status == pipeline.CallSuspended && !seen[c.ID] {
					out = append(out, fmt.Sprintf("%s (filter %+v)", c.ID, f))
				}
			}
		}
		return out
	}
	if len(missing()) == 0 {
		return
	}
	d.clock.advance(d.cfg.StepWorker.Lease.Duration + time.Second)
	if _, err := d.steps.Sweep(d.ctx); err != nil && !d.faulted(StepWorker) {
		t.Fatalf("%s: sweep: %v", d.sc.Name, err)
	}
	d.settle(prefix)
	if m := missing(); len(m) > 0 {
		t.Fatalf("%s, cut at operation %d: the run waits, but its parked calls %v are not pending after a sweep", d.sc.Name, d.inj.At, m)
	}
}

// deliver hands one message to its handler, as a consumer would, and waits
// for the work the handler put on the pool.
func (d *driver) deliver(e envelope, prefix string) {
	var handle message.NoPublishHandlerFunc
	var side Side
	switch {
	case e.Topic == d.names.RunSteps():
		handle, side = d.steps.HandleStep, StepWorker
	case e.Topic == d.names.ToolResults():
		handle, side = d.steps.HandleToolResult, StepWorker
	case e.Topic == d.names.Decisions():
		handle, side = d.steps.HandleDecision, StepWorker
	case strings.HasPrefix(e.Topic, strings.TrimSuffix(d.names.ToolCalls("q"), "q")):
		handle, side = d.tools.HandleToolCall, ToolWorker
	default:
		return // run results, dead letters: nobody here consumes them
	}
	msg := e.Msg.Copy()
	msg.SetContext(d.ctx)
	hit := d.inj.Hit()
	err := handle(msg)
	faultedHere := d.crashed(side) || (!hit && d.faulted(side))
	d.settle(prefix)
	switch {
	case faultedHere && err != nil:
		d.bus.redeliver(e) // never acknowledged: it comes back first (to the replacement, after a crash)
	case err != nil && topics.IsPermanent(err):
		d.t.Fatalf("%s: %s dead-lettered %s: %v", d.sc.Name, side, e.Topic, err)
	case err != nil:
		_ = d.bus.Publish(e.Topic, e.Msg) // nacked: delivered again later
	}
}

// settle waits for both workers' pools, then replaces a crashed worker.
func (d *driver) settle(prefix string) {
	d.steps.Wait()
	d.tools.Wait()
	if d.crashed(d.side) && d.inj.At > 0 {
		switch d.side {
		case StepWorker:
			d.steps = d.stepWorker(prefix, false)
		case ToolWorker:
			d.tools = d.toolWorker(prefix, false)
		}
		d.side = None // the replacement does not crash
	}
}

func (d *driver) crashed(side Side) bool { return side != None && side == d.side && d.inj.Crashed() }

// faulted reports whether side is the side at fault and its fault has hit:
// it crashed, or its one operation failed.
func (d *driver) faulted(side Side) bool { return side != None && side == d.side && d.inj.Hit() }

// client returns a Redis client, counting and crashing through inj when set.
func (d *driver) client(inj *Injector) *redis.Client {
	opts, err := redis.ParseURL(d.url)
	if err != nil {
		d.t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	if inj != nil {
		rdb.AddHook(inj.Hook())
	}
	d.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// deps are a worker process's dependencies; crashing ones go through the
// injector.
func (d *driver) deps(prefix, kind string, crashing bool) stepworker.Config {
	var inj *Injector
	var pub message.Publisher = d.bus
	if crashing {
		inj, pub = d.inj, d.inj.Publisher(d.bus)
	}
	d.workers++
	return stepworker.Config{
		Store: store.New(d.client(inj), store.WithPrefix(prefix), store.WithRetention(retention)), Publisher: pub, Names: d.names,
		Config: d.cfg, WorkerID: fmt.Sprintf("%s-%d", kind, d.workers), Now: d.clock.Now, Logger: quiet,
		Plugins: d.probe(inj),
	}
}

func (d *driver) stepWorker(prefix string, crashing bool) *stepworker.Worker {
	w, err := stepworker.New(d.ctx, d.deps(prefix, "sw", crashing))
	if err != nil {
		d.t.Fatal(err)
	}
	return w
}

func (d *driver) toolWorker(prefix string, crashing bool) *toolworker.Worker {
	w, err := toolworker.New(d.ctx, d.deps(prefix, "tw", crashing))
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { w.Drain(0) })
	return w
}

// create starts the run through the gateway's HTTP handler. A gateway that
// crashes answers with an error; its client sends the same request again,
// to a healthy gateway, only when the run was not written (had it been
// written, the client may never learn of it: the sweeper must start it).
func (d *driver) create(prefix string) {
	if d.side != Gateway {
		d.post(d.observer, d.bus)
		return
	}
	d.post(store.New(d.client(d.inj), store.WithPrefix(prefix), store.WithRetention(retention)), d.inj.Publisher(d.bus))
	if !d.inj.Hit() {
		return
	}
	d.side = None
	if _, err := d.observer.GetRun(d.ctx, RunID); errors.Is(err, store.ErrNotFound) {
		d.post(d.observer, d.bus)
	}
}

func (d *driver) post(st *store.Store, pub message.Publisher) {
	gw, err := gateway.New(gateway.Config{
		Store: st, Publisher: pub, Names: d.names,
		Agents:        func(name string) bool { _, ok := d.cfg.Agent(name); return ok },
		ValidateModel: func(raw json.RawMessage) error { _, err := script.Parse(raw); return err },
		SweepAfter:    d.cfg.StepWorker.Lease.Duration, Now: d.clock.Now, Logger: quiet,
	})
	if err != nil {
		d.t.Fatal(err)
	}
	body := fmt.Sprintf(`{"run_id":%q,"agent":%q,"input":"go","model":%s}`, RunID, d.sc.Agent, d.sc.Script)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "http://localhost/v1/runs", strings.NewReader(body)) // a keyless gateway answers to localhost
	req.Header.Set("Content-Type", "application/json")
	gw.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated && !d.inj.Crashed() {
		d.t.Fatalf("%s: create run: %d %s", d.sc.Name, rec.Code, rec.Body)
	}
}

// decide publishes the scenario's decision, as an outside system would.
func (d *driver) decide() {
	d.decided = true
	dec := *d.sc.Decision
	dec.RunID = RunID
	if err := topics.Publish(d.bus, d.names.Decisions(), dec); err != nil {
		d.t.Fatal(err)
	}
}

func (d *driver) outcome(prefix string) Outcome {
	t := d.t
	run, err := d.observer.GetRun(d.ctx, RunID)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := d.observer.Messages(d.ctx, RunID)
	if err != nil {
		t.Fatal(err)
	}
	events, err := d.observer.Events(d.ctx, RunID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	out := Outcome{
		Run: run, Messages: msgs, Commits: map[string]int{}, Ops: d.inj.Ops(), Kept: d.kept(prefix),
		Holds: d.holds(prefix), RunEnds: int(d.runEnds.Load()),
	}
	for _, ev := range events {
		if commits[ev.Type] {
			out.Commits[fmt.Sprintf("%s %d %s", ev.Type, ev.Step, ev.CallID)]++
		}
	}
	for _, m := range d.bus.published(d.names.RunResults()) {
		r, err := topics.Decode[topics.RunResult](m.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if r.RunID == RunID { // not a child's
			out.Results = append(out.Results, r)
		}
	}
	seen := map[string]bool{}
	for _, m := range d.bus.published(d.names.DecisionOutcomes()) {
		o, err := topics.Decode[topics.DecisionOutcome](m.Payload)
		if err != nil {
			t.Fatal(err)
		}
		id := o.DecisionID
		if call, _, timedOut := strings.Cut(id, "@"); timedOut && strings.HasPrefix(id, "timeout:") {
			id = call + "@…"
		}
		seen[id+" "+o.Outcome] = true
	}
	out.Outcomes = slices.Sorted(maps.Keys(seen))
	out.Children = d.children(run)
	return out
}

// children describes run's child runs as they ended.
func (d *driver) children(run pipeline.Run) []string {
	var out []string
	for call := range run.Children {
		id := pipeline.ChildRunID(run.ID, call)
		child, err := d.observer.GetRun(d.ctx, id)
		if err != nil {
			d.t.Fatalf("child %s: %v", id, err)
		}
		msgs, err := d.observer.Messages(d.ctx, id)
		if err != nil {
			d.t.Fatal(err)
		}
		var reason pipeline.TerminationReason
		if child.Termination != nil {
			reason = child.Termination.Reason
		}
		out = append(out, fmt.Sprintf("%s %s %s %s", id, child.Status, reason, jsonOf(d.t, msgs)))
	}
	slices.Sort(out)
	return out
}

// holds lists the budget holds left in the drive's budgets.
func (d *driver) holds(prefix string) []string {
	keys, err := d.rdb.Keys(d.ctx, prefix+":budget:*").Result()
	if err != nil {
		d.t.Fatal(err)
	}
	var out []string
	for _, k := range keys {
		fields, err := d.rdb.HKeys(d.ctx, k).Result()
		if err != nil {
			d.t.Fatal(err)
		}
		for _, f := range fields {
			if strings.HasPrefix(f, "hold:") {
				out = append(out, k+" "+f)
			}
		}
	}
	slices.Sort(out)
	return out
}

// kept says where the run is kept: the indexes that hold it, and whether
// every one of its keys expires.
func (d *driver) kept(prefix string) string {
	var where []string
	for _, index := range []string{"runs", "active", "retired"} {
		if _, err := d.rdb.ZScore(d.ctx, prefix+":"+index, RunID).Result(); err == nil {
			where = append(where, index)
		}
	}
	keys, err := d.rdb.Keys(d.ctx, prefix+":{"+RunID+"}:*").Result()
	if err != nil {
		d.t.Fatal(err)
	}
	for _, k := range keys {
		if ttl, _ := d.rdb.PTTL(d.ctx, k).Result(); ttl <= 0 {
			return strings.Join(append(where, k+" never expires"), " ")
		}
	}
	return strings.Join(append(where, "expiring"), " ")
}

// commits are the events that record a commit: each must appear exactly
// as often as in the undisturbed run, whatever was redone.
var commits = map[pipeline.EventType]bool{
	pipeline.EventRunStarted: true, pipeline.EventAssistantMessage: true, pipeline.EventToolCallCreated: true,
	pipeline.EventToolCallFinished: true, pipeline.EventToolCallParked: true, pipeline.EventStepEnded: true,
	pipeline.EventRunFinished: true, pipeline.EventRunResumed: true, pipeline.EventDecisionApplied: true,
	pipeline.EventDecisionRejected: true, pipeline.EventDecisionHeld: true, pipeline.EventRunHandoff: true,
	pipeline.EventContextCompacted: true,
	pipeline.EventActionFailed:     true,
}

// clock is the drive's time; it moves only when the driver moves it.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
