package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/topics"
)

type deadLetter struct {
	sourceTopic, reason, payload string
}

// collect consumes topic in a group of its own from the start and returns
// a function that lists the dead letters received so far.
func collect(t *testing.T, stack *app.Stack, topic string) func() []deadLetter {
	t.Helper()
	sub, err := kafka.NewSubscriber(stack.Kafka, "test-"+uuid.NewString(), watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = sub.Close() })
	msgs, err := sub.Subscribe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []deadLetter
	go func() {
		for m := range msgs {
			mu.Lock()
			got = append(got, deadLetter{
				sourceTopic: m.Metadata.Get(kafka.MetadataDeadLetterTopic),
				reason:      m.Metadata.Get(kafka.MetadataDeadLetterReason),
				payload:     string(m.Payload),
			})
			mu.Unlock()
			m.Ack()
		}
	}()
	return func() []deadLetter {
		mu.Lock()
		defer mu.Unlock()
		return append([]deadLetter(nil), got...)
	}
}

// publishRaw publishes payload as it is, keyed like a run's message.
func publishRaw(t *testing.T, stack *app.Stack, topic, payload string) {
	t.Helper()
	m := message.NewMessage(watermill.NewUUID(), []byte(payload))
	m.Metadata.Set(topics.MetadataRunID, "r-garbage")
	if err := stack.Publisher.Publish(topic, m); err != nil {
		t.Fatalf("publish to %s: %v", topic, err)
	}
}

// A ToolCallFinished for a run Redis does not hold is acknowledged, since
// its fan-in runs after, and logged, not silently dropped.
func TestPipeline_a_tool_result_for_an_unknown_run_is_logged(t *testing.T) {
	stack, logs := connectLogged(t, newInfra(t), parseConfig(t, testConfig))
	workers(t, stack)

	publishRaw(t, stack, stack.Names.ToolResults(), `{"v":1,"run_id":"r-nobody","step":0,"call_id":"c-1","status":"succeeded"}`)
	testinfra.Eventually(t, 20*time.Second, func() bool {
		return strings.Contains(logs.String(), `msg="tool result for an unknown run dropped"`) && strings.Contains(logs.String(), "run_id=r-nobody step=0 call_id=c-1")
	}, func() string { return "no log line of the result; logs:\n" + logs.String() })
}

// A decision published to Kafka with a key twice ("resume", then "cancel")
// reads one way here and another way in the system that wrote it: it goes
// to the dead-letter topic, saying which key, and the parked call stays
// parked until a decision that says one thing comes.
func TestPipeline_a_kafka_decision_with_a_key_twice_is_dead_lettered_and_nothing_is_decided(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, approvalsConfig))
	dead := collect(t, stack, stack.Names.DeadLetter())
	workers(t, stack)
	base := serve(t, stack)
	id := createRun(t, base, "r-twice", "approvals", script(call("A", "tool_a", `{"x":1}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })

	twice := `{"decision_id":"d-twice","run_id":"r-twice","call_id":"A","action":"resume","action":"cancel","decided_by":"erp"}`
	publishRaw(t, stack, stack.Names.Decisions(), twice)
	var got []deadLetter
	testinfra.Eventually(t, 20*time.Second, func() bool { got = dead(); return len(got) == 1 },
		func() string { return fmt.Sprintf("dead letters: %+v", got) })
	if d := got[0]; d.payload != twice || !strings.Contains(d.reason, `key "action" appears twice`) {
		t.Fatalf("dead letter %+v, want the decision with a reason naming the key", d)
	}
	if v := getRun(t, base, id); v.Status != pipeline.RunWaiting || callOf(v, "A").Status != pipeline.CallSuspended {
		t.Fatalf("after the dead letter the run is %s and its call %s", v.Status, callOf(v, "A").Status)
	}

	decide(t, base, id, map[string]any{"decision_id": "d-once", "call_id": "A", "action": "resume"})
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)
}
