package deadletter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/deadletter"
	"github.com/stepwise-run/stepwise/internal/kafka"
)

func TestList_shows_what_was_dead_lettered_with_topic_key_reason_and_age(t *testing.T) {
	e := newEnv(t)
	e.consume(t, e.names.Decisions(), e.names.RunSteps())
	e.publish(t, e.names.Decisions(), "r-1", `{"decision":1}`)
	e.publish(t, e.names.RunSteps(), "r-2", `{"step":2}`)
	q := e.queue(t, nil)

	recs := waitList(t, q, 2)
	byKey := map[string]deadletter.Record{}
	for _, r := range recs {
		byKey[r.Key] = r
	}
	for key, want := range map[string]struct{ topic, payload string }{
		"r-1": {e.names.Decisions(), `{"decision":1}`},
		"r-2": {e.names.RunSteps(), `{"step":2}`},
	} {
		r := byKey[key]
		if r.Topic != want.topic || r.Payload != want.payload || r.State != deadletter.StateDead {
			t.Errorf("%s: %+v, want topic %s, payload %s, state dead", key, r, want.topic, want.payload)
		}
		if r.Reason != "refused "+want.payload+" (attempt 1)" {
			t.Errorf("%s: reason %q", key, r.Reason)
		}
		if age := time.Since(r.Time); age < 0 || age > time.Minute {
			t.Errorf("%s: dead-lettered at %s, %s ago", key, r.Time, age)
		}
	}

	var table bytes.Buffer
	if err := deadletter.WriteTable(&table, recs, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RECORD", "AGE", "TOPIC", "KEY", "STATE", "REASON", e.names.Decisions(), "r-1", "dead", `refused {"decision":1} (attempt 1)`, "2 dead-letter records"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := deadletter.WriteJSON(&js, recs); err != nil {
		t.Fatal(err)
	}
	var decoded []map[string]any
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil || len(decoded) != 2 || decoded[0]["reason"] == "" {
		t.Fatalf("JSON %s: %v", js.String(), err)
	}
}

func TestList_filters_by_topic_short_or_full_and_by_age(t *testing.T) {
	e := newEnv(t)
	e.consume(t, e.names.Decisions(), e.names.RunSteps())
	e.publish(t, e.names.Decisions(), "r-1", `{"decision":1}`)
	e.publish(t, e.names.RunSteps(), "r-2", `{"step":2}`)
	waitList(t, e.queue(t, nil), 2)

	later := func(c *deadletter.Config) { c.Now = func() time.Time { return time.Now().Add(2 * time.Hour) } }
	for _, tc := range []struct {
		name  string
		f     deadletter.Filter
		clock func(*deadletter.Config)
		want  []string
	}{
		{"short topic", deadletter.Filter{Topic: "decisions"}, nil, []string{"r-1"}},
		{"full topic", deadletter.Filter{Topic: e.names.RunSteps()}, nil, []string{"r-2"}},
		{"unknown topic", deadletter.Filter{Topic: "tool-results"}, nil, nil},
		{"recent enough", deadletter.Filter{Since: time.Hour}, nil, []string{"r-1", "r-2"}},
		{"too old two hours on", deadletter.Filter{Since: time.Hour}, later, nil},
		{"old enough two hours on", deadletter.Filter{Since: 3 * time.Hour, Topic: "run-steps"}, later, []string{"r-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := e.queue(t, tc.clock).List(context.Background(), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.Key)
			}
			slices.Sort(got)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("listed %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := e.queue(t, nil).List(context.Background(), deadletter.Filter{Since: -time.Hour}); err == nil {
		t.Fatal("a negative since was accepted")
	}
}

func TestList_with_an_unreachable_broker_fails_clearly(t *testing.T) {
	e := newEnv(t)
	q := e.queue(t, func(c *deadletter.Config) { c.Kafka = kafka.Plain("127.0.0.1:1") })
	_, err := q.List(context.Background(), deadletter.Filter{})
	if err == nil || !strings.Contains(err.Error(), "kafka brokers unreachable") {
		t.Fatalf("err = %v, want one that says the brokers are unreachable", err)
	}
}
