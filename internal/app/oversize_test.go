package app_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/topics"
)

// overLimit is more than the broker takes in one record by default
// (kafka.max_message_bytes, 1 MiB).
const overLimit = 2 << 20

// scriptCalling is a run's own script model whose first turn calls echo
// with args under the id callID ("" for the default id), and whose second
// ends the run.
func scriptCalling(t *testing.T, callID string, args any) string {
	t.Helper()
	call := map[string]any{"name": "echo", "arguments": args}
	if callID != "" {
		call["id"] = callID
	}
	b, err := json.Marshal(map[string]any{"provider": "script", "turns": []any{
		map[string]any{"text": "calling", "tool_calls": []any{call}}, map[string]any{"text": "done"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A call's request names it and carries no arguments: the tool worker
// executes those the store holds, so arguments over the broker's limit run
// like any others.
func TestOversize_a_tool_call_with_arguments_over_the_broker_limit_runs_and_its_run_ends(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, testConfig))
	workers(t, stack)
	base := serve(t, stack)

	text := strings.Repeat("a", overLimit)
	id := createRun(t, base, "r-big-args", "assistant", scriptCalling(t, "", map[string]string{"text": text}))
	v := waitDone(t, base, id, 60*time.Second)
	assertNaturalEnd(t, v, 1)
	var got struct{ Text string }
	if len(v.ToolCalls) != 1 || v.ToolCalls[0].Status != pipeline.CallSucceeded || json.Unmarshal(v.ToolCalls[0].Result, &got) != nil || got.Text != text {
		t.Fatalf("the call did not echo its %d bytes: %d calls, first %+v", len(text), len(v.ToolCalls), v.ToolCalls[0].Status)
	}
}

// A run's result that would be over the broker's limit with the run's
// metadata goes to run-results without it, saying so; the metadata stays
// readable from the API.
func TestOversize_a_run_with_5MB_of_metadata_has_its_result_on_run_results_without_it(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, testConfig))
	results := collect(t, stack, stack.Names.RunResults())
	workers(t, stack)
	base := serve(t, stack)

	meta := map[string]string{"blob": strings.Repeat("m", 5<<20)}
	body := map[string]any{"run_id": "r-big-meta", "agent": "assistant", "input": "go", "metadata": meta}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs", body, nil); code != http.StatusCreated {
		t.Fatalf("create run: status %d", code)
	}
	waitDone(t, base, "r-big-meta", 30*time.Second)
	res := resultOf(t, results, "r-big-meta")
	if !res.MetadataOmitted || res.Metadata != nil || res.Termination.Reason != pipeline.ReasonNaturalEnd {
		t.Fatalf("result: metadata_omitted %v, %d bytes of metadata, termination %+v; want the metadata left out, said so",
			res.MetadataOmitted, len(res.Metadata), res.Termination)
	}
	var run struct{ Metadata struct{ Blob string } }
	if code := httpDo(t, http.MethodGet, base+"/v1/runs/r-big-meta", nil, &run); code != http.StatusOK || run.Metadata.Blob != meta["blob"] {
		t.Fatalf("GET the run: status %d, %d bytes of metadata blob, want all %d", code, len(run.Metadata.Blob), len(meta["blob"]))
	}
}

// resultOf waits for the result of run id among those results collects
// from run-results (failing t after 30 s) and returns it.
func resultOf(t *testing.T, results func() []deadLetter, id string) topics.RunResult {
	t.Helper()
	var res topics.RunResult
	testinfra.Eventually(t, 30*time.Second, func() bool {
		for _, r := range results() {
			if m, err := topics.Decode[topics.RunResult]([]byte(r.payload)); err == nil && m.RunID == id {
				res = m
				return true
			}
		}
		return false
	}, func() string { return "no result of " + id + " on run-results" })
	return res
}

// countTooLarge counts the publishes to topic refused for their size.
type countTooLarge struct {
	message.Publisher
	topic string
	mu    sync.Mutex
	n     int
}

func (c *countTooLarge) Publish(topic string, msgs ...*message.Message) error {
	err := c.Publisher.Publish(topic, msgs...)
	if topic == c.topic && errors.Is(err, topics.ErrTooLarge) {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	return err
}

func (c *countTooLarge) refused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// A record too large even by its ids (a model gave a call an id over the
// broker's limit) is refused at every try: the run ends with an error that
// says so at the first refusal, instead of being published again at every
// look of the sweeper while it stays running.
func TestOversize_a_call_request_the_broker_refuses_ends_the_run_with_an_error_at_once(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, testConfig))
	counter := &countTooLarge{Publisher: stack.Publisher, topic: stack.Names.ToolCalls("default")}
	stack.Publisher = counter
	workers(t, stack)
	base := serve(t, stack)

	id := createRun(t, base, "r-big-id", "assistant", scriptCalling(t, strings.Repeat("c", overLimit), map[string]int{"n": 1}))
	v := waitDone(t, base, id, 30*time.Second)
	if v.Termination.Reason != pipeline.ReasonError || !strings.Contains(v.Termination.Detail, "too large") {
		t.Fatalf("run ended %s (%s), want error saying the message is too large", v.Termination.Reason, v.Termination.Detail)
	}
	if n := counter.refused(); n != 1 {
		t.Fatalf("the call's request was refused %d times, want once", n)
	}
}

// A decision the broker would refuse for its size is refused up front
// with 413, not answered 503 as if a retry could help.
func TestOversize_a_decision_over_the_broker_limit_is_refused_with_413(t *testing.T) {
	cfg := parseConfig(t, strings.Replace(testConfig, "kafka: {partitions: 4}", "kafka: {partitions: 4, max_message_bytes: 4096}", 1))
	stack := connect(t, newInfra(t), cfg)
	base := serve(t, stack)

	id := createRun(t, base, "r-big-decision", "assistant", `{"provider":"script","turns":[{"text":"hi"}]}`)
	body := map[string]any{"call_id": "c-1", "action": "resume", "payload": map[string]string{"note": strings.Repeat("p", 8<<10)}}
	if code := httpDo(t, http.MethodPost, fmt.Sprintf("%s/v1/runs/%s/decisions", base, id), body, nil); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("decision: status %d, want 413", code)
	}
}
