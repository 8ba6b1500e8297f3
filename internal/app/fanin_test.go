package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// lateReplay publishes every message of one topic a second time, later: a
// redelivery that arrives after what the message asked for has happened.
// The delays take turns, so that replays land in the steps after the one
// they ended and after the run's end.
type lateReplay struct {
	message.Publisher
	topic  string
	delays []time.Duration

	mu       sync.Mutex
	n        int
	wg       sync.WaitGroup
	replayed int
	errs     []error
}

func (r *lateReplay) Publish(topic string, msgs ...*message.Message) error {
	if err := r.Publisher.Publish(topic, msgs...); err != nil || topic != r.topic {
		return err
	}
	for _, m := range msgs {
		again := m.Copy()
		r.mu.Lock()
		delay := r.delays[r.n%len(r.delays)]
		r.n++
		r.mu.Unlock()
		r.wg.Add(1)
		time.AfterFunc(delay, func() {
			defer r.wg.Done()
			err := r.Publisher.Publish(topic, again)
			r.mu.Lock()
			defer r.mu.Unlock()
			if err != nil {
				r.errs = append(r.errs, err)
				return
			}
			r.replayed++
		})
	}
	return nil
}

// A tool result is redelivered late: after its step ended, the next one
// started, or the run finished. Its fan-in reads the run and finds nothing
// to end (and the end checks the step it ends), so every run still ends
// with the exact history, the same call records and one end per step.
func TestPipeline_tool_results_redelivered_late_change_nothing(t *testing.T) {
	in := newInfra(t)
	stack := connect(t, in, parseConfig(t, testConfig))
	// Step two sleeps 30 ms: the short delays land step one's result in it.
	replay := &lateReplay{Publisher: stack.Publisher, topic: stack.Names.ToolResults(),
		delays: []time.Duration{5 * time.Millisecond, 15 * time.Millisecond, 25 * time.Millisecond, 150 * time.Millisecond}}
	stack.Publisher = replay
	stopSteps := start(t, stack.RunStepWorker)
	start(t, func(ctx context.Context) error { return stack.RunToolWorker(ctx, nil) })
	base := serve(t, stack)

	ids := runThreeSteps(t, base, "r-late", 8)
	replay.wg.Wait()
	replay.mu.Lock()
	replayed, errs := replay.replayed, replay.errs
	replay.mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("replays failed: %v", errs)
	}
	// Each run's two steps with calls fan in from their last call.
	if replayed < 2*len(ids) {
		t.Fatalf("%d tool results replayed, want at least %d", replayed, 2*len(ids))
	}
	// Once the step worker has consumed the replays, stopping it waits for
	// the fan-ins they started; then nothing can have been ended twice.
	group := stack.Config.Kafka.TopicPrefix + "stepworker"
	testinfra.Eventually(t, 20*time.Second, func() bool {
		lags, err := kafka.Lag(context.Background(), stack.Kafka, group, []string{stack.Names.ToolResults()})
		if err != nil {
			return false
		}
		for _, l := range lags {
			if l.Lag > 0 {
				return false
			}
		}
		return true
	}, func() string { return "the step worker consuming every replayed tool result" })
	stopSteps()
	for _, id := range ids {
		events := runEvents(t, stack, id)
		if n := len(eventsOf(events, pipeline.EventStepEnded)); n != 3 {
			t.Fatalf("run %s: %d step.ended events, want 3: %v", id, n, eventTypes(events))
		}
		if n := len(eventsOf(events, pipeline.EventStepStarted)); n != 3 {
			t.Fatalf("run %s: %d step.started events, want 3: %v", id, n, eventTypes(events))
		}
	}
}

// recordTopic keeps the payloads published to one topic.
type recordTopic struct {
	message.Publisher
	topic string

	mu       sync.Mutex
	payloads [][]byte
}

func (r *recordTopic) Publish(topic string, msgs ...*message.Message) error {
	if topic == r.topic {
		r.mu.Lock()
		for _, m := range msgs {
			r.payloads = append(r.payloads, m.Payload)
		}
		r.mu.Unlock()
	}
	return r.Publisher.Publish(topic, msgs...)
}

// A tool result names its call and nothing of its step (the fan-in reads
// the step, ADR 0054): a run with its own script and big metadata runs
// every step with its script, its result carries its metadata, and no
// tool result carries either, nor a view of the step.
func TestPipeline_a_run_with_its_own_model_and_metadata_keeps_both_past_its_fan_ins(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, testConfig))
	results := collect(t, stack, stack.Names.RunResults())
	sent := &recordTopic{Publisher: stack.Publisher, topic: stack.Names.ToolResults()}
	stack.Publisher = sent
	workers(t, stack)
	base := serve(t, stack)

	metadata := `{"note":"` + strings.Repeat("n", 500) + `","order":7}`
	body := map[string]any{"run_id": "r-own", "agent": "assistant", "input": "go",
		"model": json.RawMessage(threeSteps), "metadata": json.RawMessage(metadata)}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs", body, nil); code != http.StatusCreated {
		t.Fatalf("create run: status %d", code)
	}
	assertNaturalEnd(t, waitDone(t, base, "r-own", 30*time.Second), 2)
	assertHistory(t, getMessages(t, base, "r-own"), threeStepsHistory())

	result := resultOf(t, results, "r-own")
	if string(result.Metadata) != metadata {
		t.Errorf("the result's metadata is %s, want %s", result.Metadata, metadata)
	}
	sent.mu.Lock()
	defer sent.mu.Unlock()
	if len(sent.payloads) == 0 {
		t.Fatal("no tool result was sent: the test tested nothing")
	}
	for _, p := range sent.payloads {
		if bytes.Contains(p, []byte(`"view"`)) || bytes.Contains(p, []byte("nnnn")) || bytes.Contains(p, []byte("step one")) {
			t.Errorf("a tool result carries a view of its step, or the run's metadata or model: %.300s", p)
		}
	}
}
