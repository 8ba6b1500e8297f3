package stepworker

import (
	"errors"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/topics"
)

// dispatchable returns the indexes in calls of the calls that may be
// published now, by the tool execution mode of agent (as the run's
// version defines it): in parallel mode every call that waits for a tool worker
// (new, or resuming after a decision); in sequential mode only the first
// call that is not terminal, if it waits (while it runs or is suspended,
// the ones after it wait).
func dispatchable(agent config.Agent, calls []pipeline.ToolCall) []int {
	var out []int
	for i, c := range calls {
		waits := c.Status == pipeline.CallNew || c.Status == pipeline.CallResuming
		if agent.Sequential() {
			if c.Status.Terminal() {
				continue
			}
			if waits {
				out = append(out, i)
			}
			return out
		}
		if waits {
			out = append(out, i)
		}
	}
	return out
}

// publishCalls publishes ToolCallRequested for calls, those of one queue
// in one batch (one produce request, not one per call), each saying how
// many others of its step are in its batch (the claim of the first may
// take them, ADR 0025). Publishing a call twice is harmless: the second
// claim finds it taken.
func (w *Worker) publishCalls(trace string, calls []pipeline.ToolCall) error {
	byQueue := map[string][]*message.Message{} // one batch per queue topic
	var queues []string
	inQueue := map[string]int{}
	for _, c := range calls {
		inQueue[c.Queue]++
	}
	for _, c := range calls {
		m, err := topics.NewMessage(topics.ToolCallRequested{
			Header: topics.Header{RunID: c.RunID}, Step: c.Step, CallID: c.ID, Tool: c.Tool,
			Siblings: inQueue[c.Queue] - 1,
		})
		if err != nil {
			return err
		}
		if trace != "" {
			m.Metadata.Set(topics.MetadataTrace, trace)
		}
		if byQueue[c.Queue] == nil {
			queues = append(queues, c.Queue)
		}
		byQueue[c.Queue] = append(byQueue[c.Queue], m)
	}
	var errs []error
	for _, q := range queues {
		errs = append(errs, w.pub.Publish(w.names.ToolCalls(q), byQueue[q]...))
	}
	return errors.Join(errs...)
}

func queueOf(q string) string {
	if q == "" {
		return topics.DefaultQueue
	}
	return q
}
