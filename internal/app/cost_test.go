package app_test

import (
	"context"
	"testing"

	"github.com/stepwise-run/stepwise/internal/tooling/bench"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

// The ceilings of what one agent step costs on package bench's latency
// scenario (runs of 3 steps one at a time, their creation and result
// included): Redis round trips and commands (those inside scripts
// included) and Kafka publishes. They are counts, not times, so they hold
// on any machine. Measured when they were added: 18.0 round trips, 81.3
// commands and 3.7 publishes a step; now 4.7 (the bench's own INFO reads
// no longer counted; the fan-in ends a step from the view its tool result
// carries, ADR 0022; a call's claim takes the other of its step with it,
// ADR 0025), 48.0 (a script's counters written with its other
// fields, a finished call not read back; the next step claimed by the
// script that ends the step, a hash read whole once rather than read
// again) and 1.7 (docs/
// benchmarks.md#testcost has each change). The ceilings leave room for a
// sweeper tick or a redelivery during the test; the work of "The hot path
// at the floor" lowers them. Since issue 36 (ADRs 0053, 0054) a step's
// fan-in reads the step, and a run's end reads its outbox before its
// result: 5.7 round trips a step of these 3-step runs.
const (
	maxRoundTripsPerStep = 6.0
	maxCommandsPerStep   = 55.0
	maxPublishesPerStep  = 2.0

	// A 20-call step: 56-57 commands a call when every result reconciled
	// on its own, 31-32 with the fan-ins of a run coalesced, 29.2 since
	// only the last call in flight fans in (one read of the step, however
	// many calls it has), so the count no longer depends on how the
	// results bunch up; 27.1 with the calls marked in their commit, 26.2
	// once the commit no longer reads them back, 22.8 once the claims and
	// the commit write their counters with their other fields, 21.8 once a
	// finished call is not read back; 21.9 since the last finish looks at
	// the step's width for a view (ADR 0022: one LRANGE a step); 20.5
	// since the claims return the call they read at the start (20.2 with
	// the retirement's fewer commands); 19.3 since the first call's claim
	// takes the others of the step with it (ADR 0025); 18.4 since the
	// commit checks that its calls are new with one EXISTS, not one a call;
	// 17.4 since the claim reads each other call it takes once; 16.3 since
	// the end of a step takes the calls its fan-in's read saw terminal
	// without reading them again (ADR 0045); 17.3 since it reads them
	// again, and decides from what it reads (ADR 0054); 17.55 since a
	// run's creation also indexes it by agent for search (ADR 0069: two
	// commands a run, 0.1 a call here; measured 17.45 → 17.55, one sitting).
	// Its round trips: 2.5 a call, 1.4 since then (one claim a step, not
	// one a call).
	fanoutCalls              = 20
	maxCommandsPerWideCall   = 17.6
	maxRoundTripsPerWideCall = 1.8

	// A step of a model that streams its answer (llm-bound: the synthetic
	// model, 500 ms, then five words at once): 10.5 round trips and 77
	// commands when every word was a delta of its own, 5.7 and 57 since
	// the words that arrive within 50 ms of a delta's write go out as one
	// (ADR 0020), 4.4 and 47.5 since the fan-in ends a step from its tool
	// result's view (ADR 0022); 5.9 since the fan-in reads the step again
	// (ADR 0054) and a run's end reads its outbox (ADR 0053). The ceiling
	// leaves room for one more delta a step.
	maxRoundTripsPerStreamedStep = 6.3

	// A step with its one tool call (ten-steps: runs of 10 steps, an echo
	// in each of the first nine), the hot-path issue's workload and goal:
	// at most 4 round trips. 4.9 before, 4.0 (4.1 with the ten runs here,
	// where a sweeper tick weighs more) since the fan-in ends a step from
	// its tool result's view (ADR 0022): the call's claim and finish, the
	// end with the next step's claim, the commit; a run's creation, first
	// claim and retirement take what the last step's end and commit, in
	// one round trip, leave. The ceiling leaves room for a sweeper tick.
	// Its commands: 46.2, 43.5 with the view, 35.5 since end_step claims
	// the next step itself, the scripts read a hash whole once rather than
	// read it again, and a run's retirement skips keys it does not have;
	// 33.7 since the finish of a step's only call reads the run once, and
	// not the step list; 32.8 since its end reads the call once for its
	// status and for the list; 31.0 since a step of one call keeps no
	// count of calls in flight and a run that has had no decision says so;
	// 30.8 since a run's retirement gives its event stream its time to
	// live as it compacts it; 30.0 since it deletes the step lists in one
	// command rather than give each its time to live (ADR 0029); 29.3
	// since the end takes the call as its fan-in's read saw it, terminal
	// (ADR 0045; the goal is 16); 37.4 since the fan-in reads the step
	// (ADR 0054: the snapshot's script, its reads of the run, the list,
	// the call, the held decisions and the outbox, and the sweep time)
	// and the end reads the call's status and the list again. Its round
	// trips: 4.9 since then, the fan-in's read of the step the one added.
	maxRoundTripsPerOneCallStep = 5.1
	maxCommandsPerOneCallStep   = 38.5
)

// What a step costs, counted by package bench on four of its scenarios:
// latency (ten runs of 3 steps, 2 tool calls in each of the first two, one
// after the other, their creation and result included) against the
// ceilings above, and fanout (runs of one 20-call step, all at once),
// logged with a loose ceiling, llm-bound (runs of a model that takes
// 500 ms, then streams its answer), ten-steps (runs of 10 steps, one
// call a step) and long-runs (the same of 300 steps, held to the same
// ceilings: a step deep in a run costs what an early one does). The
// figures are counts, so they hold on any machine.
func TestCost_round_trips_commands_and_publishes_per_step(t *testing.T) {
	rep, err := bench.Run(context.Background(), bench.Options{
		Scenarios: []string{"latency", "fanout", "llm-bound", "ten-steps", "long-runs"}, Runs: 10,
		Kafka: testinfra.Kafka(t)[0], Redis: testinfra.RedisServer(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	c, wide, streamed := rep.Scenarios[0], rep.Scenarios[1], rep.Scenarios[2]
	t.Logf("per agent step: %.1f Redis round trips, %.1f Redis commands (scripts' included), %.1f Kafka publishes",
		c.RedisRoundTripsPerStep, c.RedisCommandsPerStep, c.KafkaPublishesPerStep)
	for _, l := range []struct {
		what      string
		got, ceil float64
	}{{"Redis round trips", c.RedisRoundTripsPerStep, maxRoundTripsPerStep}, {"Redis commands", c.RedisCommandsPerStep, maxCommandsPerStep},
		{"publishes", c.KafkaPublishesPerStep, maxPublishesPerStep}} {
		if l.got > l.ceil {
			t.Errorf("%s per step: %.1f, above the ceiling of %.1f", l.what, l.got, l.ceil)
		}
	}
	perCall := wide.RedisCommandsPerStep * float64(wide.Steps) / float64(wide.Calls)
	tripsPerCall := wide.RedisRoundTripsPerStep * float64(wide.Steps) / float64(wide.Calls)
	t.Logf("per tool call of a %d-call step: %.1f Redis commands (scripts' included), %.1f round trips",
		fanoutCalls, perCall, tripsPerCall)
	if perCall > maxCommandsPerWideCall {
		t.Errorf("%.1f Redis commands per call of a %d-call step, above the ceiling of %.1f", perCall, fanoutCalls, maxCommandsPerWideCall)
	}
	if tripsPerCall > maxRoundTripsPerWideCall {
		t.Errorf("%.1f Redis round trips per call of a %d-call step, above the ceiling of %.1f", tripsPerCall, fanoutCalls, maxRoundTripsPerWideCall)
	}
	t.Logf("per step of a streaming model: %.1f Redis round trips, %.1f Redis commands", streamed.RedisRoundTripsPerStep, streamed.RedisCommandsPerStep)
	if streamed.RedisRoundTripsPerStep > maxRoundTripsPerStreamedStep {
		t.Errorf("%.1f Redis round trips per step of a streaming model, above the ceiling of %.1f", streamed.RedisRoundTripsPerStep, maxRoundTripsPerStreamedStep)
	}
	for _, oneCall := range rep.Scenarios[3:] {
		t.Logf("%s, per step with one tool call: %.2f Redis round trips, %.1f Redis commands, %.1f Kafka publishes",
			oneCall.Scenario, oneCall.RedisRoundTripsPerStep, oneCall.RedisCommandsPerStep, oneCall.KafkaPublishesPerStep)
		if oneCall.RedisRoundTripsPerStep > maxRoundTripsPerOneCallStep {
			t.Errorf("%s: %.2f Redis round trips per step with one tool call, above the ceiling of %.1f", oneCall.Scenario, oneCall.RedisRoundTripsPerStep, maxRoundTripsPerOneCallStep)
		}
		if oneCall.RedisCommandsPerStep > maxCommandsPerOneCallStep {
			t.Errorf("%s: %.1f Redis commands per step with one tool call, above the ceiling of %.1f", oneCall.Scenario, oneCall.RedisCommandsPerStep, maxCommandsPerOneCallStep)
		}
	}
}
