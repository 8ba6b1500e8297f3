package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/topics"
)

// The ceilings of what one agent step costs on the fixed workload of
// TestCost (runs of threeSteps, one at a time, their creation and result
// included): Redis round trips and commands (those inside scripts
// included) and Kafka publishes. They are counts, not times, so they hold
// on any machine. Measured when they were added: 18.0 round trips, 81.3
// commands and 3.7 publishes a step; now 11.0, 76.2 and 3.0 (docs/
// benchmarks.md#testcost has each change). The ceilings leave room for a
// sweeper tick or two during the test; the work of "The hot path at the
// floor" lowers them.
const (
	maxRoundTripsPerStep = 12.5
	maxCommandsPerStep   = 85.0
	maxPublishesPerStep  = 3.3

	// A 20-call step's fan-in: 56-57 commands a call when every result
	// reconciled on its own, 31-32 with the fan-ins of a run coalesced.
	// How many coalesce depends on how the results bunch up, so the
	// ceiling only guards against the pathological (every result reading
	// every call more than once).
	fanoutCalls            = 20
	maxCommandsPerWideCall = 80.0
)

// countRoundTrips counts the client's round trips to Redis: one per
// command sent alone, one per pipeline.
type countRoundTrips struct{ n atomic.Int64 }

func (c *countRoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *countRoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "xread" { // a blocked read waits, it is not work
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *countRoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// countPublishes counts the publishes through it: each is one synchronous
// produce request (a batch when it carries several messages).
type countPublishes struct {
	message.Publisher
	n atomic.Int64
}

func (c *countPublishes) Publish(topic string, msgs ...*message.Message) error {
	c.n.Add(1)
	return c.Publisher.Publish(topic, msgs...)
}

// serverCommands is how many commands redis-server has executed, those run
// by scripts included (INFO commandstats).
func serverCommands(t *testing.T, rdb redis.UniversalClient) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\r\n") {
		if !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		_, stats, _ := strings.Cut(line, ":")
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		total += n
	}
	return total
}

// cost is what one agent step cost on average.
type cost struct{ roundTrips, commands, publishes float64 }

// measureCost runs runs runs of script one after the other, each of
// stepsPerRun steps, through the real handlers, store and a private
// redis-server (messages on an in-process channel), and returns what a
// step cost, the runs' creation and results included.
func measureCost(t *testing.T, script string, runs, stepsPerRun int) cost {
	t.Helper()
	cfg, err := config.Parse([]byte(benchConfig))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stack, err := app.InProcess(ctx, app.Options{Config: cfg, Redis: testinfra.RedisServer(t), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stack.Close() })
	trips := &countRoundTrips{}
	stack.Redis.AddHook(trips)
	pubs := &countPublishes{Publisher: stack.Publisher}
	stack.Publisher = pubs
	results := make(chan string, 16)
	sub, err := stack.Subscriber("cost")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := sub.Subscribe(ctx, stack.Names.RunResults())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for m := range msgs {
			if r, err := topics.Decode[topics.RunResult](m.Payload); err == nil {
				results <- r.RunID
			}
			m.Ack()
		}
	}()
	start(t, stack.RunStepWorker)
	start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })

	run := func() {
		id := "cost-" + uuid.NewString()
		now := time.Now()
		if _, _, err := stack.Store.CreateRun(ctx, pipeline.Run{ID: id, Agent: "assistant", Model: json.RawMessage(script), RequestHash: "cost"},
			[]pipeline.Message{{Role: pipeline.RoleUser, Content: "go"}}, now); err != nil {
			t.Fatal(err)
		}
		if err := stack.Store.ScheduleSweep(ctx, id, now.Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := topics.Publish(stack.Publisher, stack.Names.RunSteps(), topics.StepRequested{Header: topics.Header{RunID: id}}); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-results:
			if got != id {
				t.Fatalf("result of %s, want %s", got, id)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("run %s did not end", id)
		}
	}
	run() // loads the scripts and warms the pools
	time.Sleep(100 * time.Millisecond)
	trips.n.Store(0)
	pubs.n.Store(0)
	before := serverCommands(t, stack.Redis)
	for range runs {
		run()
	}
	time.Sleep(100 * time.Millisecond) // the last result's mark
	steps := float64(runs * stepsPerRun)
	return cost{
		roundTrips: float64(trips.n.Load()) / steps,
		commands:   float64(serverCommands(t, stack.Redis)-before-1) / steps,
		publishes:  float64(pubs.n.Load()-int64(runs)) / steps,
	}
}

// What a step costs, counted on a fixed workload: ten runs of threeSteps
// one after the other (3 steps, 2 tool calls in each of the first two).
// The figures are logged; the test fails when a change makes a step cost
// more than the ceilings above.
func TestCost_round_trips_commands_and_publishes_per_step(t *testing.T) {
	c := measureCost(t, threeSteps, 10, 3)
	t.Logf("per agent step: %.1f Redis round trips, %.1f Redis commands (scripts' included), %.1f Kafka publishes", c.roundTrips, c.commands, c.publishes)
	for _, l := range []struct {
		what      string
		got, ceil float64
	}{{"Redis round trips", c.roundTrips, maxRoundTripsPerStep}, {"Redis commands", c.commands, maxCommandsPerStep}, {"publishes", c.publishes, maxPublishesPerStep}} {
		if l.got > l.ceil {
			t.Errorf("%s per step: %.1f, above the ceiling of %.1f", l.what, l.got, l.ceil)
		}
	}
}

// A step of 20 tool calls, five runs of one such step and an answer: what
// a call costs, its share of the fan-in included (logged; the ceiling is
// loose, see maxCommandsPerWideCall).
func TestCost_of_a_call_in_a_wide_step(t *testing.T) {
	var calls []string
	for i := range fanoutCalls {
		calls = append(calls, fmt.Sprintf(`{"name":"echo","arguments":{"i":%d}}`, i))
	}
	wide := `{"provider":"script","turns":[{"text":"fan out","tool_calls":[` + strings.Join(calls, ",") + `]},{"text":"done"}]}`
	c := measureCost(t, wide, 5, 2)
	perCall := c.commands * 2 / fanoutCalls
	t.Logf("per tool call of a %d-call step: %.1f Redis commands (scripts' included), %.1f round trips", fanoutCalls, perCall, c.roundTrips*2/fanoutCalls)
	if perCall > maxCommandsPerWideCall {
		t.Errorf("%.1f Redis commands per call of a %d-call step, above the ceiling of %.1f", perCall, fanoutCalls, maxCommandsPerWideCall)
	}
}
