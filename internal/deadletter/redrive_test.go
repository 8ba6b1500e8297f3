package deadletter_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/deadletter"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

// redrive runs a Redrive of q and fails t on an error.
func redrive(t *testing.T, q *deadletter.Queue, f deadletter.Filter, dryRun bool) deadletter.Report {
	t.Helper()
	rep, err := q.Redrive(context.Background(), f, dryRun)
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	return rep
}

// waitAccepted waits until the consumer took n messages.
func waitAccepted(t *testing.T, c *consumer, n int) []accepted {
	t.Helper()
	testinfra.Eventually(t, 20*time.Second, func() bool { return len(c.accepted()) >= n },
		func() string { return fmt.Sprintf("the consumer took %d messages, want %d", len(c.accepted()), n) })
	return c.accepted()
}

// Two refused messages, their cause fixed, re-driven: each reaches its
// topic once, on its run's partition, with its metadata and where it came
// from; a second redrive publishes nothing.
func TestRedrive_publishes_each_record_once_and_again_nothing(t *testing.T) {
	e := newEnv(t)
	c := e.consume(t, e.names.Decisions(), e.names.RunSteps())
	e.publish(t, e.names.Decisions(), "r-1", `{"decision":1}`)
	e.publish(t, e.names.RunSteps(), "r-2", `{"step":2}`)
	q := e.queue(t, nil)
	recs := waitList(t, q, 2)

	c.fix()
	rep := redrive(t, q, deadletter.Filter{}, false)
	if len(rep.Redriven) != 2 || len(rep.Skipped) != 0 || rep.DryRun {
		t.Fatalf("first redrive: %+v", rep)
	}
	got := waitAccepted(t, c, 2)
	for _, a := range got {
		if a.metadata.Get(kafka.MetadataDeadLetterReason) != "" || !strings.HasPrefix(a.metadata.Get(deadletter.MetadataRedrivenFrom), e.names.DeadLetter()+"/") {
			t.Errorf("re-driven %s carries %v", a.payload, a.metadata)
		}
		if want := kafka.PartitionOf([]byte(a.runID), 3); a.partition != want {
			t.Errorf("%s arrived on partition %d, want its run's %d", a.runID, a.partition, want)
		}
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "re-drove 2 records") {
		t.Errorf("report %q, %v", text.String(), err)
	}

	again := redrive(t, q, deadletter.Filter{}, false)
	if len(again.Redriven) != 0 || len(again.Skipped) != 2 || again.Skipped[0].Why != deadletter.SkipRedriven {
		t.Fatalf("second redrive: %+v", again)
	}
	for _, r := range waitList(t, q, 2) {
		if r.State != deadletter.StateRedriven || r.RedrivenAt.IsZero() {
			t.Errorf("%s is %s after a redrive", r.ID(), r.State)
		}
	}
	time.Sleep(300 * time.Millisecond) // what a second publish would take to arrive
	if n := len(c.accepted()); n != 2 {
		t.Fatalf("the consumer took %d messages after two redrives of %d records", n, len(recs))
	}
}

func TestRedrive_a_dry_run_publishes_and_records_nothing(t *testing.T) {
	e := newEnv(t)
	c := e.consume(t, e.names.Decisions())
	e.publish(t, e.names.Decisions(), "r-1", `{"decision":1}`)
	q := e.queue(t, nil)
	waitList(t, q, 1)
	c.fix()
	rep := redrive(t, q, deadletter.Filter{}, true)
	if !rep.DryRun || len(rep.Redriven) != 1 {
		t.Fatalf("dry run: %+v", rep)
	}
	var text strings.Builder
	_ = rep.WriteText(&text)
	if !strings.Contains(text.String(), "dry run, nothing published or recorded: would re-drive 1 records") {
		t.Errorf("report %q", text.String())
	}
	time.Sleep(300 * time.Millisecond)
	if len(c.accepted()) != 0 || waitList(t, q, 1)[0].State != deadletter.StateDead {
		t.Fatal("a dry run published or marked")
	}
	if rep := redrive(t, q, deadletter.Filter{}, false); len(rep.Redriven) != 1 {
		t.Fatalf("the redrive after the dry run: %+v", rep)
	}
	waitAccepted(t, c, 1)
}

func TestRedrive_filters_by_topic_and_age(t *testing.T) {
	e := newEnv(t)
	c := e.consume(t, e.names.Decisions(), e.names.RunSteps())
	e.publish(t, e.names.Decisions(), "r-1", `{"decision":1}`)
	e.publish(t, e.names.RunSteps(), "r-2", `{"step":2}`)
	later := time.Now().Add(time.Hour)
	q := e.queue(t, nil)
	waitList(t, q, 2)
	c.fix()

	// An hour from now, nothing is younger than 30m.
	old := e.queue(t, func(cfg *deadletter.Config) { cfg.Now = func() time.Time { return later } })
	if rep := redrive(t, old, deadletter.Filter{Since: 30 * time.Minute}, false); len(rep.Redriven) != 0 || rep.Skipped[0].Why != deadletter.SkipTooOld {
		t.Fatalf("since 30m, an hour later: %+v", rep)
	}
	rep := redrive(t, q, deadletter.Filter{Topic: "decisions", Since: time.Minute}, false)
	if len(rep.Redriven) != 1 || rep.Redriven[0].Key != "r-1" || len(rep.Skipped) != 1 || rep.Skipped[0].Why != deadletter.SkipOtherTopic {
		t.Fatalf("--topic decisions: %+v", rep)
	}
	if got := waitAccepted(t, c, 1); got[0].runID != "r-1" {
		t.Fatalf("took %+v", got)
	}
	rep = redrive(t, q, deadletter.Filter{Topic: e.names.RunSteps()}, false)
	if len(rep.Redriven) != 1 || rep.Redriven[0].Key != "r-2" {
		t.Fatalf("--topic with the full name: %+v", rep)
	}
	waitAccepted(t, c, 2)
}

// Redrives at once share the work: each record is published once.
func TestRedrive_redrives_at_once_publish_each_record_once(t *testing.T) {
	e := newEnv(t)
	c := e.consume(t, e.names.Decisions())
	const n = 20
	for i := range n {
		e.publish(t, e.names.Decisions(), fmt.Sprintf("r-%d", i), fmt.Sprintf(`{"decision":%d}`, i))
	}
	q := e.queue(t, nil)
	waitList(t, q, n)
	c.fix()
	var wg sync.WaitGroup
	reports := make([]deadletter.Report, 4)
	for i := range reports {
		wg.Go(func() {
			rep, err := e.queue(t, nil).Redrive(context.Background(), deadletter.Filter{}, false)
			if err != nil {
				t.Errorf("Redrive %d: %v", i, err)
			}
			reports[i] = rep
		})
	}
	wg.Wait()
	total := 0
	for _, rep := range reports {
		total += len(rep.Redriven)
	}
	if total != n {
		t.Fatalf("%d records re-driven by 4 redrives at once, want %d", total, n)
	}
	waitAccepted(t, c, n)
	time.Sleep(300 * time.Millisecond)
	seen := map[string]int{}
	for _, a := range c.accepted() {
		seen[a.payload]++
	}
	for p, k := range seen {
		if k != 1 {
			t.Errorf("%s arrived %d times", p, k)
		}
	}
}

// A re-driven message whose cause is not fixed fails again: it returns to
// the dead-letter topic as a new record with its new reason and where it
// was re-driven from, and the next redrive takes only that one.
func TestRedrive_a_message_that_fails_again_returns_with_its_new_reason(t *testing.T) {
	e := newEnv(t)
	c := e.consume(t, e.names.Decisions())
	e.publish(t, e.names.Decisions(), "r-1", `{"decision":1}`)
	q := e.queue(t, nil)
	first := waitList(t, q, 1)[0]

	if rep := redrive(t, q, deadletter.Filter{}, false); len(rep.Redriven) != 1 {
		t.Fatalf("redrive: %+v", rep)
	}
	recs := waitList(t, q, 2)
	again := recs[0]
	if again.ID() == first.ID() {
		again = recs[1]
	}
	if again.Reason != `refused {"decision":1} (attempt 2)` || again.RedrivenFrom != e.names.DeadLetter()+"/"+first.ID() || again.State != deadletter.StateDead {
		t.Fatalf("the second dead letter: %+v", again)
	}
	c.fix()
	rep := redrive(t, q, deadletter.Filter{}, false)
	if len(rep.Redriven) != 1 || rep.Redriven[0].ID() != again.ID() {
		t.Fatalf("the next redrive: %+v", rep)
	}
	if got := waitAccepted(t, c, 1); got[0].payload != `{"decision":1}` {
		t.Fatalf("took %+v", got)
	}
}
