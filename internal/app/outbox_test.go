package app_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/topics"
)

// failFirst fails the first publish of each run's message to one topic, as
// a broker hiccup (or a worker dying before its publish) would.
type failFirst struct {
	message.Publisher
	topic string
	mu    sync.Mutex
	seen  map[string]bool
}

func (f *failFirst) Publish(topic string, msgs ...*message.Message) error {
	if topic == f.topic {
		f.mu.Lock()
		run := msgs[0].Metadata.Get(topics.MetadataRunID)
		first := !f.seen[run]
		f.seen[run] = true
		f.mu.Unlock()
		if first {
			return errors.New("broker hiccup")
		}
	}
	return f.Publisher.Publish(topic, msgs...)
}

func TestOutbox_a_result_whose_publish_failed_goes_out_from_the_sweeper(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, testConfig))
	results := collect(t, stack, stack.Names.RunResults())
	stack.Publisher = &failFirst{Publisher: stack.Publisher, topic: stack.Names.RunResults(), seen: map[string]bool{}}
	workers(t, stack)
	base := serve(t, stack)

	ids := []string{createRun(t, base, "r-outbox-1", "assistant", threeSteps), createRun(t, base, "r-outbox-2", "assistant", `{"provider":"script","turns":[{"text":"hi"}]}`)}
	for _, id := range ids {
		waitDone(t, base, id, 30*time.Second)
	}
	testinfra.Eventually(t, 30*time.Second, func() bool {
		got := map[string]bool{}
		for _, r := range results() {
			if m, err := topics.Decode[topics.RunResult]([]byte(r.payload)); err == nil {
				got[m.RunID] = true
			}
		}
		return got[ids[0]] && got[ids[1]]
	}, func() string { return "not every result reached run-results" })
}

// A commit marks the calls it dispatches as being sent by its worker, and
// other reconciles trust the mark while that worker lives. When the publish
// after the commit fails, the worker takes the marks back, and the sweeper
// publishes the calls at its next look: not after dispatch_timeout (five
// minutes here, longer than the test waits).
func TestOutbox_calls_whose_publish_failed_after_their_commit_go_out_from_the_sweeper(t *testing.T) {
	cfg := parseConfig(t, strings.Replace(testConfig, "dispatch_timeout: 3s", "dispatch_timeout: 5m", 1))
	stack := connect(t, newInfra(t), cfg)
	failing := &failFirst{Publisher: stack.Publisher, topic: stack.Names.ToolCalls("default"), seen: map[string]bool{}}
	stack.Publisher = failing
	workers(t, stack)
	base := serve(t, stack)

	id := createRun(t, base, "r-outbox-calls", "assistant", threeSteps)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 2)
	failing.mu.Lock()
	defer failing.mu.Unlock()
	if !failing.seen[id] {
		t.Fatal("no publish of the run's calls failed: the test tested nothing")
	}
}
