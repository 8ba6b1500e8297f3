package app_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

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
	eventually(t, 30*time.Second, func() bool {
		got := map[string]bool{}
		for _, r := range results() {
			if m, err := topics.Decode[topics.RunResult]([]byte(r.payload)); err == nil {
				got[m.RunID] = true
			}
		}
		return got[ids[0]] && got[ids[1]]
	}, func() string { return "not every result reached run-results" })
}
