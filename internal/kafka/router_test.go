package kafka_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/topics"
)

func TestRouter_messages_of_a_run_share_a_partition_and_keep_their_order(t *testing.T) {
	t.Parallel()
	in := unique(t, "in")
	s := newStack(t, 4, in)

	type step struct {
		RunID string `json:"run_id"`
		Seq   int    `json:"seq"`
	}
	rec := &recorder{}
	r := s.router(t, kafka.RouterConfig{})
	r.AddConsumerHandler("steps", in, s.subscriber(t, unique(t, "group")), func(msg *message.Message) error {
		rec.add(msg)
		return nil
	})
	run(t, r)

	runs := []string{"run-a", "run-b", "run-c", "run-d", "run-e"}
	const perRun = 10
	for seq := range perRun {
		for _, id := range runs {
			b, _ := json.Marshal(step{RunID: id, Seq: seq})
			s.publish(t, in, id, string(b))
		}
	}
	eventually(t, 10*time.Second, "all messages handled", func() bool { return rec.len() == len(runs)*perRun })

	partitionOf := map[string]int32{}
	next := map[string]int{}
	for _, m := range rec.all() {
		var st step
		if err := json.Unmarshal([]byte(m.payload), &st); err != nil {
			t.Fatalf("payload %q: %v", m.payload, err)
		}
		if m.key != st.RunID || m.metadata.Get(topics.MetadataRunID) != st.RunID {
			t.Errorf("message of %s has key %q and run_id %q", st.RunID, m.key, m.metadata.Get(topics.MetadataRunID))
		}
		if p, ok := partitionOf[st.RunID]; ok && p != m.partition {
			t.Errorf("%s seq %d on partition %d, earlier ones on %d", st.RunID, st.Seq, m.partition, p)
		}
		partitionOf[st.RunID] = m.partition
		if st.Seq != next[st.RunID] {
			t.Errorf("%s: got seq %d, want %d", st.RunID, st.Seq, next[st.RunID])
		}
		next[st.RunID] = st.Seq + 1
	}
}

// attempts counts handler calls per payload.
type attempts struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *attempts) inc(payload []byte) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[string]int{}
	}
	a.n[string(payload)]++
	return a.n[string(payload)]
}

func (a *attempts) of(payload string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[payload]
}

func TestRouter_permanent_errors_go_to_dead_letter_with_the_reason_and_the_next_message_is_handled(t *testing.T) {
	t.Parallel()
	in := unique(t, "in")
	s := newStack(t, 1, in)
	dead := s.collect(t, s.deadLetter)

	var tries attempts
	handled := &recorder{}
	r := s.router(t, kafka.RouterConfig{})
	r.AddConsumerHandler("steps", in, s.subscriber(t, unique(t, "group")), func(msg *message.Message) error {
		tries.inc(msg.Payload)
		if string(msg.Payload) == `{"unknown_tool":true}` {
			return topics.Permanent(errors.New("tool nope is not configured"))
		}
		if _, err := topics.Decode[topics.StepRequested](msg.Payload); err != nil {
			return fmt.Errorf("handle step: %w", err)
		}
		handled.add(msg)
		return nil
	})
	run(t, r)

	s.publish(t, in, "r-1", "not json")
	s.publish(t, in, "r-1", `{"unknown_tool":true}`)
	s.publish(t, in, "r-1", `{"v":1,"run_id":"r-1","step":0}`)

	eventually(t, 10*time.Second, "the valid message handled", func() bool { return handled.len() == 1 })
	eventually(t, 10*time.Second, "two messages dead-lettered", func() bool { return dead.len() == 2 })

	_, decodeErr := topics.Decode[topics.StepRequested]([]byte("not json"))
	want := map[string]string{
		"not json":              "handle step: " + decodeErr.Error(),
		`{"unknown_tool":true}`: "tool nope is not configured",
	}
	for _, m := range dead.all() {
		if got := m.metadata.Get(kafka.MetadataDeadLetterReason); got != want[m.payload] {
			t.Errorf("reason of %q = %q, want %q", m.payload, got, want[m.payload])
		}
		if got := m.metadata.Get(kafka.MetadataDeadLetterTopic); got != in {
			t.Errorf("source topic of %q = %q, want %q", m.payload, got, in)
		}
		if got := m.metadata.Get(kafka.MetadataDeadLetterHandler); got != "steps" {
			t.Errorf("handler of %q = %q, want steps", m.payload, got)
		}
		if m.key != "r-1" || m.metadata.Get(topics.MetadataRunID) != "r-1" {
			t.Errorf("dead letter %q has key %q, run_id %q; want r-1", m.payload, m.key, m.metadata.Get(topics.MetadataRunID))
		}
		if n := tries.of(m.payload); n != 1 {
			t.Errorf("%q was tried %d times; permanent errors are not retried", m.payload, n)
		}
	}
}

func TestRouter_transient_error_is_retried_until_it_succeeds(t *testing.T) {
	t.Parallel()
	in := unique(t, "in")
	s := newStack(t, 1, in)

	var tries attempts
	handled := &recorder{}
	r := s.router(t, kafka.RouterConfig{MaxRetries: 3, RetryInterval: 5 * time.Millisecond})
	r.AddConsumerHandler("steps", in, s.subscriber(t, unique(t, "group")), func(msg *message.Message) error {
		if tries.inc(msg.Payload) <= 2 {
			return errors.New("redis: connection refused")
		}
		handled.add(msg)
		return nil
	})
	run(t, r)

	s.publish(t, in, "r-1", "flaky")
	eventually(t, 10*time.Second, "message handled", func() bool { return handled.len() == 1 })
	if n := tries.of("flaky"); n != 3 {
		t.Errorf("handler called %d times, want 3", n)
	}
	if n := topicSize(t, s.brokers, s.deadLetter); n != 0 {
		t.Errorf("dead letter holds %d messages, want none", n)
	}
}

func TestRouter_transient_error_past_the_retries_is_redelivered_not_dead_lettered(t *testing.T) {
	t.Parallel()
	in := unique(t, "in")
	s := newStack(t, 1, in)

	var tries attempts
	handled := &recorder{}
	r := s.router(t, kafka.RouterConfig{MaxRetries: 1, RetryInterval: 5 * time.Millisecond})
	sub := s.subscriber(t, unique(t, "group"), kafka.WithNackResendSleep(20*time.Millisecond))
	r.AddConsumerHandler("steps", in, sub, func(msg *message.Message) error {
		if string(msg.Payload) == "stubborn" && tries.inc(msg.Payload) <= 5 {
			return errors.New("model provider: 503")
		}
		handled.add(msg)
		return nil
	})
	run(t, r)

	s.publish(t, in, "r-1", "stubborn")
	s.publish(t, in, "r-1", "next")
	eventually(t, 10*time.Second, "both messages handled", func() bool { return handled.len() == 2 })
	if got := handled.all(); got[0].payload != "stubborn" || got[1].payload != "next" {
		t.Errorf("handled %q then %q, want stubborn then next", got[0].payload, got[1].payload)
	}
	if n := tries.of("stubborn"); n != 6 {
		t.Errorf("handler called %d times for stubborn, want 6 (3 deliveries of 1 try + 1 retry)", n)
	}
	if n := topicSize(t, s.brokers, s.deadLetter); n != 0 {
		t.Errorf("dead letter holds %d messages, want none", n)
	}
}

func TestRouter_panic_is_retried_then_dead_lettered(t *testing.T) {
	t.Parallel()
	in := unique(t, "in")
	s := newStack(t, 1, in)
	dead := s.collect(t, s.deadLetter)

	var tries attempts
	handled := &recorder{}
	r := s.router(t, kafka.RouterConfig{MaxRetries: 2, RetryInterval: 5 * time.Millisecond})
	r.AddConsumerHandler("steps", in, s.subscriber(t, unique(t, "group")), func(msg *message.Message) error {
		tries.inc(msg.Payload)
		if string(msg.Payload) == "boom" {
			panic("nil map in step handler")
		}
		handled.add(msg)
		return nil
	})
	run(t, r)

	s.publish(t, in, "r-1", "boom")
	s.publish(t, in, "r-1", "next")
	eventually(t, 10*time.Second, "next message handled", func() bool { return handled.len() == 1 })
	eventually(t, 10*time.Second, "panicking message dead-lettered", func() bool { return dead.len() == 1 })
	if n := tries.of("boom"); n != 3 {
		t.Errorf("panicking handler called %d times, want 3 (1 + 2 retries)", n)
	}
	if reason := dead.all()[0].metadata.Get(kafka.MetadataDeadLetterReason); !strings.Contains(reason, "nil map in step handler") {
		t.Errorf("reason %q does not name the panic", reason)
	}
}

func TestRouterConfig_Validate_reports_every_problem(t *testing.T) {
	t.Parallel()
	err := kafka.RouterConfig{CloseTimeout: -time.Second}.Validate()
	for _, want := range []string{"DeadLetterPublisher", "DeadLetterTopic", "CloseTimeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %s", err, want)
		}
	}
	if _, err := kafka.NewRouter(kafka.RouterConfig{}); err == nil {
		t.Error("NewRouter accepted a config without dead-letter topic")
	}
}

// A reason of several lines — a payload with many problems, joined by
// errors.Join — is dead-lettered on one line, and the dead letter is
// logged once, with its topic, key and reason.
func TestRouter_dead_letters_are_logged_with_their_reason_on_one_line(t *testing.T) {
	t.Parallel()
	in := unique(t, "in")
	s := newStack(t, 1, in)
	dead := s.collect(t, s.deadLetter)
	var logs testinfra.Logs
	r := s.router(t, kafka.RouterConfig{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	r.AddConsumerHandler("decisions", in, s.subscriber(t, unique(t, "group")), func(msg *message.Message) error {
		_, err := topics.Decode[topics.Decision](msg.Payload)
		return err
	})
	run(t, r)

	s.publish(t, in, "r-9", `{"v":1,"action":"maybe"}`)
	eventually(t, 10*time.Second, "the decision dead-lettered", func() bool { return dead.len() == 1 })
	const want = `malformed message: topics.Decision: run_id is missing; decision_id is missing; action "maybe" is not "resume", "cancel" or "cancel_run"`
	if got := dead.all()[0].metadata.Get(kafka.MetadataDeadLetterReason); got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
	var line string
	eventually(t, 10*time.Second, "the dead letter logged", func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "message dead-lettered") {
				line = l
				return true
			}
		}
		return false
	})
	for _, part := range []string{"level=WARN", "topic=" + in, "key=r-9", "handler=decisions", `run_id is missing; decision_id is missing`} {
		if !strings.Contains(line, part) {
			t.Errorf("log line %q lacks %q", line, part)
		}
	}
}

func TestOneLine_joins_lines_and_blanks_control_characters(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"one line", "one line"},
		{"a\nb\n", "a; b"},
		{"panic: boom\n\ngoroutine 7 [running]:\n\tmain.f()\r\n\t\t/x.go:3", "panic: boom; goroutine 7 [running]:; main.f(); /x.go:3"},
		{"bell\a and tab\tinside", "bell  and tab inside"},
	} {
		if got := kafka.OneLine(c.in); got != c.want {
			t.Errorf("OneLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
