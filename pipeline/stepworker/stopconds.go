package stepworker

import (
	"context"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/stop"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// stopped evaluates the stop conditions of ver, the run's agent version,
// at the end of the run's current step, whose calls are given; it reads
// only the history the conditions need. nil: the run goes on.
func (w *Worker) stopped(ctx context.Context, ver *versions.Version, run pipeline.Run, calls []pipeline.ToolCall) (*pipeline.Termination, error) {
	conds := ver.Stops()
	if !conds.Enabled() {
		return nil, nil
	}
	history := calls
	if n := conds.NeedsHistory(); n > 1 && run.Step > 0 {
		all, err := w.store.RunCalls(ctx, run.ID)
		if err != nil {
			return nil, err
		}
		history = all
	}
	steps := stop.History(history, run.Step, max(conds.NeedsHistory(), 1))
	if ver.Agent.Stop.ContentMatch != "" {
		text, err := w.lastAssistantText(ctx, run.ID)
		if err != nil {
			return nil, err
		}
		steps[len(steps)-1].AssistantText = text
	}
	return conds.Evaluate(stop.State{
		Step: run.Step, StartedAt: run.CreatedAt, Now: w.now(), Usage: run.Usage, Steps: steps,
	}), nil
}

// lastAssistantText is the text of the run's latest assistant message: the
// answer of the step that is ending.
func (w *Worker) lastAssistantText(ctx context.Context, runID string) (string, error) {
	msgs, err := w.store.Messages(ctx, runID)
	if err != nil {
		return "", err
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == pipeline.RoleAssistant {
			return msgs[i].Content, nil
		}
	}
	return "", nil
}
