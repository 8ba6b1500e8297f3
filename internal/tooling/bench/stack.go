package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"runtime/trace"
	"slices"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/fakebatch"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/topics"
)

// stack is the stack under measurement, its counters, and the results of
// its runs as they arrive.
type stack struct {
	stack    *app.Stack
	trips    *RoundTrips
	pubs     *Publishes
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	waiting  map[string]chan ended // run id → gets its result when it arrives
	last     string                // the run requested last (KeyBytes measures its keys)
	parts    []part                // the processes whose CPU is measured apart, this one first
	batchAPI *fakebatch.Server     // the Batch API of the batch-inference scenario's model
	trace    io.Writer             // the next measured part's runtime trace goes there; nil: none
}

// part is a process, or processes, whose CPU time so far cpu says (false:
// the system does not say).
type part struct {
	name string
	cpu  func() (time.Duration, bool)
}

// ended is a run's result as it arrived: its steps, when, and its cost.
type ended struct {
	steps int
	at    time.Time
	cost  float64 // USD, as the result's usage says
}

// newStack connects the stack under measurement with connect (app.Connect,
// or app.InProcess for no broker) and runs its step worker
// when steps is set, its tool worker when tools is set, and a gateway (on
// a loopback port, for its run-requests consumer) when gateway is set.
func newStack(ctx context.Context, connect func(context.Context, app.Options) (*app.Stack, error), o app.Options, steps, tools, gateway bool) (*stack, error) {
	st, err := connect(ctx, o)
	if err != nil {
		return nil, err
	}
	s := &stack{stack: st, trips: &RoundTrips{}, waiting: map[string]chan ended{}, parts: []part{{"bench", processCPU}}}
	st.Redis.AddHook(s.trips)
	s.pubs = &Publishes{Publisher: st.Publisher}
	st.Publisher = s.pubs
	ctx, s.cancel = context.WithCancel(ctx)
	sub, err := st.Subscriber("bench-results")
	if err != nil {
		s.close()
		return nil, err
	}
	msgs, err := sub.Subscribe(ctx, st.Names.RunResults())
	if err != nil {
		s.close()
		return nil, err
	}
	s.wg.Go(func() {
		for m := range msgs {
			if r, err := topics.Decode[topics.RunResult](m.Payload); err == nil {
				s.mu.Lock()
				if ch, ok := s.waiting[r.RunID]; ok {
					ch <- ended{r.Step + 1, time.Now(), r.Usage.CostUSD}
					delete(s.waiting, r.RunID)
				}
				s.mu.Unlock()
			}
			m.Ack()
		}
	})
	if steps {
		s.wg.Go(func() { _ = st.RunStepWorker(ctx) })
	}
	if tools {
		s.wg.Go(func() { _ = st.RunToolWorker(ctx, nil) })
	}
	if gateway {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.close()
			return nil, err
		}
		s.wg.Go(func() { _ = st.RunGateway(ctx, l) })
	}
	s.wg.Go(func() { <-ctx.Done(); _ = sub.Close() })
	return s, nil
}

func (s *stack) close() {
	s.cancel()
	s.wg.Wait()
	_ = s.stack.Close()
}

// await registers a run whose result is awaited.
func (s *stack) await(id string) chan ended {
	ch := make(chan ended, 1)
	s.mu.Lock()
	s.waiting[id] = ch
	s.mu.Unlock()
	return ch
}

// inFlight is a run requested, and where its result's steps arrive.
type inFlight struct {
	r    run
	done chan ended
}

// run is a whole scenario's workload, unmeasured (a warm-up): its batch,
// or its parking and decisions.
func (s *stack) run(ctx context.Context, sc Scenario, n int) error {
	if !sc.decides {
		_, _, _, _, err := s.batch(ctx, sc, n, nil)
		return err
	}
	parked, err := s.park(ctx, sc, n)
	if err != nil {
		return err
	}
	_, _, err = s.decide(ctx, sc, parked, new(time.Time), nil)
	return err
}

// park requests n runs of sc and waits until each waits for its decision.
func (s *stack) park(ctx context.Context, sc Scenario, n int) ([]inFlight, error) {
	var out []inFlight
	for range n {
		id := newRunID()
		done := s.await(id)
		r, err := s.request(ctx, sc, id)
		if err != nil {
			return nil, err
		}
		out = append(out, inFlight{r, done})
	}
	for _, f := range out {
		if err := s.awaitWaiting(ctx, f.r, func(time.Duration) {}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decide publishes a resume of call D for every parked run at once, as an
// outside system deciding them together would (one produce of them all,
// as DBOS's peer bench sends its signals together), and waits for their
// results; each latency is from the burst's publish to its run's result,
// and each run counts the one step the decision let it take; sent is set
// to the publish's start. Published
// one after the other, the 1,000 decisions took about 450 ms to send,
// and the runs' times from their own decision measured how far the
// handlers lagged behind that trickle, not the burst.
func (s *stack) decide(ctx context.Context, sc Scenario, parked []inFlight, sent *time.Time, progress io.Writer) ([]time.Duration, int, error) {
	msgs := make([]*message.Message, len(parked))
	for i, f := range parked {
		msg, err := topics.NewMessage(topics.Decision{
			Header: topics.Header{RunID: f.r.id}, DecisionID: "bench-" + f.r.id, CallID: "D", Action: topics.ActionResume, DecidedBy: "bench",
		})
		if err != nil {
			return nil, 0, err
		}
		msgs[i] = msg
	}
	*sent = time.Now()
	if err := s.stack.Publisher.Publish(s.stack.Names.Decisions(), msgs...); err != nil {
		return nil, 0, fmt.Errorf("publish the decisions: %w", err)
	}
	lat := make([]time.Duration, 0, len(parked))
	for _, f := range parked {
		select {
		case e := <-f.done:
			lat = append(lat, e.at.Sub(*sent))
			if progress != nil && (len(lat)%50 == 0 || len(lat) == len(parked)) {
				fmt.Fprintf(progress, "\r%s: %d/%d decided runs done", sc.Name, len(lat), len(parked))
			}
		case <-time.After(2 * time.Minute):
			return nil, 0, fmt.Errorf("run %s did not end within 2m of its decision", f.r.id)
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	if progress != nil {
		fmt.Fprintln(progress)
	}
	return lat, len(parked), nil
}

// batch runs n runs of sc (all at once, or one at a time) and returns the
// per-step latency of each run, the steps they took, the sum of their
// times from request to result and of their costs. "All at once" is one requester after the
// other, about a millisecond a run: 1,000 runs start over about a second;
// the runs of a scenario that asks for them together start as a
// gateway's batch does (requestTogether).
func (s *stack) batch(ctx context.Context, sc Scenario, n int, progress io.Writer) ([]time.Duration, int, time.Duration, float64, error) {
	var lat []time.Duration
	var busy time.Duration
	var cost float64
	steps := 0
	wait := func(f inFlight) error {
		if sc.parks {
			return s.awaitWaiting(ctx, f.r, func(d time.Duration) {
				steps++
				lat = append(lat, d)
				busy += d
			})
		}
		select {
		case e := <-f.done:
			steps += e.steps
			lat = append(lat, e.at.Sub(f.r.start)/time.Duration(e.steps))
			busy += e.at.Sub(f.r.start)
			cost += e.cost
			if progress != nil && (len(lat)%10 == 0 || len(lat) == n) {
				fmt.Fprintf(progress, "\r%s: %d/%d runs", sc.Name, len(lat), n)
			}
			return nil
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("run %s did not end within 2m", f.r.id)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var flights []inFlight
	if sc.together {
		var err error
		if flights, err = s.requestTogether(ctx, sc, n); err != nil {
			return nil, 0, 0, 0, err
		}
	}
	for range n - len(flights) {
		id := newRunID()
		done := s.await(id)
		r, err := s.request(ctx, sc, id)
		if err != nil {
			return nil, 0, 0, 0, err
		}
		f := inFlight{r, done}
		if sc.sequential {
			if err := wait(f); err != nil {
				return nil, 0, 0, 0, err
			}
			continue
		}
		flights = append(flights, f)
	}
	for _, f := range flights {
		if err := wait(f); err != nil {
			return nil, 0, 0, 0, err
		}
	}
	if progress != nil {
		fmt.Fprintln(progress)
	}
	return lat, steps, busy, cost, nil
}

// requestTogether requests n runs of sc as many at a time as the gateway's
// batch endpoint starts of a batch by default.
func (s *stack) requestTogether(ctx context.Context, sc Scenario, n int) ([]inFlight, error) {
	flights := make([]inFlight, n)
	errs := make([]error, n)
	sem := make(chan struct{}, gateway.DefaultBatchConcurrency)
	var wg sync.WaitGroup
	for i := range flights {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			id := newRunID()
			done := s.await(id)
			r, err := s.request(ctx, sc, id)
			flights[i], errs[i] = inFlight{r, done}, err
		})
	}
	wg.Wait()
	return flights, errors.Join(errs...)
}

// measure warms the stack up with a few runs, then runs the scenario with
// every counter reset, and computes its Result. A decisions scenario
// parks its runs first, unmeasured, and measures their decisions.
func (s *stack) measure(ctx context.Context, sc Scenario, n int, progress io.Writer) (Result, error) {
	if err := s.run(ctx, sc, min(n, 5)); err != nil {
		return Result{}, err
	}
	var parked []inFlight
	if sc.decides {
		var err error
		if parked, err = s.park(ctx, sc, n); err != nil {
			return Result{}, err
		}
	}
	time.Sleep(200 * time.Millisecond) // the warm-up's last marks
	s.trips.Reset()
	s.pubs.Reset()
	before := ReadServerStats(ctx, s.stack.Redis)
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := s.cpu()
	jobs0 := len(s.batchAPI.Batches())
	stopTrace, err := s.startTrace()
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	peak := s.sampleActive(ctx, sc)
	var lat []time.Duration
	var steps int
	var busy time.Duration // the runs' times in flight, summed
	var cost float64       // the runs' costs, summed
	var sent time.Time     // when the parked runs' decisions were published
	if sc.stepTimes {
		s.pubs.Watch(s.stack.Names.ToolCalls(topics.DefaultQueue))
	}
	if sc.decides {
		lat, steps, err = s.decide(ctx, sc, parked, &sent, progress)
	} else {
		lat, steps, busy, cost, err = s.batch(ctx, sc, n, progress)
	}
	stopTrace()
	if err != nil {
		return Result{}, err
	}
	if sc.stepTimes {
		lat = stepTimes(s.pubs.Watched())
		s.pubs.Watch("")
	}
	elapsed := time.Since(start)
	maxActive := peak()
	cpu1 := s.cpu()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	after := ReadServerStats(ctx, s.stack.Redis)
	per := func(x float64) float64 { return x / float64(steps) }
	res := Result{
		Scenario: sc.Name, Runs: n, Steps: steps, Calls: n * sc.calls, Seconds: elapsed.Seconds(),
		StepsPerS: float64(steps) / elapsed.Seconds(), CallsPerS: float64(n*sc.calls) / elapsed.Seconds(),
		P50ms: percentile(lat, 0.50), P99ms: percentile(lat, 0.99), Samples: len(lat), RunsDone: n, RunsPerHour: float64(n) / elapsed.Hours(), BatchJobs: -1, CostPer1000Runs: -1,
		RedisRoundTripsPerStep: per(float64(s.trips.Count())), KafkaPublishesPerStep: per(float64(s.pubs.Count() - int64(n))),
		AllocBytesPerStep:    per(float64(m1.TotalAlloc - m0.TotalAlloc)),
		RedisCommandsPerStep: -1, RedisCPUmsPerStep: -1, RedisBusiestCPUmsPerStep: -1, RedisBytesPerParkedCall: -1, LittlesLawFraction: -1,
		ProcessCPUmsPerStep: -1, RunsInFlight: -1, ResumedP50ms: -1, ResumedP99ms: -1, AllResumedMs: -1,
		MaxActiveRuns: -1, AdmissionLimit: -1, LagEnd: -1,
		samples: lat,
	}
	for name, d := range cpu1 {
		if res.CPUmsPerStepByPart == nil {
			res.CPUmsPerStepByPart = map[string]float64{}
		}
		res.CPUmsPerStepByPart[name] = per(float64((d - cpu0[name]).Microseconds()) / 1000)
	}
	if ms, ok := res.CPUmsPerStepByPart["bench"]; ok {
		res.ProcessCPUmsPerStep = ms
	}
	if sc.latency > 0 {
		res.RunsInFlight = busy.Seconds() / elapsed.Seconds()
		res.LittlesLawFraction = res.StepsPerS / (res.RunsInFlight / sc.latency.Seconds())
	}
	if before.OK && after.OK {
		res.RedisCommandsPerStep = per(float64(after.Commands - before.Commands - 3*int64(len(after.NodeCPU)))) // less the first reading's three INFOs a node
		res.RedisCPUmsPerStep = per((after.CPU - before.CPU) * 1000)
		if res.CPUmsPerStepByPart != nil {
			res.CPUmsPerStepByPart["redis"] = res.RedisCPUmsPerStep
		}
		res.RedisPrimaries = len(after.NodeCPU)
		for node, cpu := range after.NodeCPU {
			res.RedisBusiestCPUmsPerStep = max(res.RedisBusiestCPUmsPerStep, per((cpu-before.NodeCPU[node])*1000))
		}
	}
	if sc.fake {
		res.CostPer1000Runs = cost / float64(n) * 1000
	}
	if sc.batched {
		jobs := s.batchAPI.Batches()[jobs0:]
		res.BatchJobs = len(jobs)
		for _, j := range jobs {
			res.BatchJobRequests = append(res.BatchJobRequests, j.RequestCounts.Total)
		}
		if twice := s.batchAPI.Repeated(); len(twice) > 0 {
			return Result{}, fmt.Errorf("the Batch API was sent %d custom_ids twice, %s first", len(twice), twice[0])
		}
	}
	if sc.requested { // after the counts: these reads are the bench's
		res.MaxActiveRuns, res.AdmissionLimit = maxActive, admissionLimit
		if res.LagEnd, err = s.requestLag(ctx); err != nil {
			return Result{}, err
		}
	}
	if sc.decides { // after the counts: the event reads are the bench's, not the pipeline's
		resumed, err := s.resumed(ctx, parked, sent)
		if err != nil {
			return Result{}, err
		}
		res.ResumedP50ms, res.ResumedP99ms = percentile(resumed, 0.50), percentile(resumed, 0.99)
		res.AllResumedMs = float64(slices.Max(resumed).Microseconds()) / 1000
	}
	if sc.parks && before.OK && after.OK {
		res.RedisBytesPerParkedCall = float64(after.UsedMemory-before.UsedMemory) / float64(n*sc.calls)
	}
	if sc.keys && before.OK && after.OK { // after the counts: these are the bench's commands
		s.mu.Lock()
		last := s.last
		s.mu.Unlock()
		if res.RedisBytesByKey, err = KeyBytes(ctx, s.stack.Redis, last); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// startTrace starts the runtime trace of a measured part, if one is
// wanted and none was taken yet, and returns what stops it.
func (s *stack) startTrace() (func(), error) {
	if s.trace == nil {
		return func() {}, nil
	}
	if err := trace.Start(s.trace); err != nil {
		return nil, fmt.Errorf("runtime trace: %w", err)
	}
	s.trace = nil
	return trace.Stop, nil
}

// resumed reads, from each decided run's event log, how long after its
// decisions were published (sent) the run was running again: its
// run.resumed event.
func (s *stack) resumed(ctx context.Context, parked []inFlight, sent time.Time) ([]time.Duration, error) {
	out := make([]time.Duration, 0, len(parked))
	for _, f := range parked {
		evs, err := s.stack.Store.Events(ctx, f.r.id, "", 1000)
		if err != nil {
			return nil, err
		}
		at := slices.IndexFunc(evs, func(e pipeline.Event) bool { return e.Type == pipeline.EventRunResumed })
		if at < 0 {
			return nil, fmt.Errorf("run %s has no run.resumed event after its decision", f.r.id)
		}
		out = append(out, evs[at].At.Sub(sent))
	}
	return out, nil
}

// awaitWaiting polls the run until it waits for a decision, and reports
// how long that took.
func (s *stack) awaitWaiting(ctx context.Context, r run, done func(time.Duration)) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := s.stack.Store.GetRun(ctx, r.id)
		if err != nil {
			return err
		}
		if got.Status == pipeline.RunWaiting {
			done(time.Since(r.start))
			return nil
		}
		if got.Status == pipeline.RunDone || time.Now().After(deadline) {
			return fmt.Errorf("run %s is %s, not waiting for a decision", r.id, got.Status)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// cpu is the CPU time each part has used so far, of those the system
// says.
func (s *stack) cpu() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, p := range s.parts {
		if d, ok := p.cpu(); ok {
			out[p.name] = d
		}
	}
	return out
}

// stepTimes are the steps' times of a run of one call a step, alone on
// the stack: from the publish of one step's call to the next's, the
// counterpart of DBOS's latency mode (from one step's inference to the
// next's).
func stepTimes(calls []time.Time) []time.Duration {
	out := make([]time.Duration, 0, len(calls))
	for i := 1; i < len(calls); i++ {
		out = append(out, calls[i].Sub(calls[i-1]))
	}
	return out
}

func percentile(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := min(len(s)-1, int(p*float64(len(s))))
	return float64(s[i].Microseconds()) / 1000
}

// sampleActive, for a requested scenario, reads the store's active runs
// every 100 ms until the returned function is called, which returns the
// most it read (-1 for other scenarios).
func (s *stack) sampleActive(ctx context.Context, sc Scenario) func() int64 {
	if !sc.requested {
		return func() int64 { return -1 }
	}
	stop, done := make(chan struct{}), make(chan int64)
	go func() {
		var most int64
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if c, err := s.stack.Store.Count(ctx); err == nil {
				most = max(most, c.Active)
			}
			select {
			case <-stop:
				done <- most
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 { close(stop); return <-done }
}

// requestLag is the gateways' lag on the run-requests topic, summed over
// its partitions, once it is 0 or after 10 s: the consumer commits its
// offsets a second or so after it handled them.
func (s *stack) requestLag(ctx context.Context) (int64, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		lags, err := kafka.Lag(ctx, s.stack.Kafka, s.stack.ConsumerGroup("gateway"), []string{s.stack.Names.RunRequests()})
		var sum int64
		for _, l := range lags {
			sum += l.Lag
		}
		if err != nil || sum == 0 || time.Now().After(deadline) {
			return sum, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
