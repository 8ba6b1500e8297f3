package stepworker

import (
	"context"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/stop"
)

// compileStops compiles every agent's stop conditions once.
func compileStops(cfg *config.Config) (map[string]*stop.Conditions, error) {
	out := make(map[string]*stop.Conditions, len(cfg.Agents))
	for name, a := range cfg.Agents {
		c, err := stop.Compile(a.Stop)
		if err != nil {
			return nil, fmt.Errorf("agents.%s.stop: %w", name, err)
		}
		out[name] = c
	}
	return out, nil
}

// stopped evaluates the agent's stop conditions at the end of the run's
// current step, whose calls are given; it reads only the history the
// conditions need. nil: the run goes on.
func (w *Worker) stopped(ctx context.Context, run pipeline.Run, calls []pipeline.ToolCall) (*pipeline.Termination, error) {
	conds := w.stops[run.CurrentAgent]
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
	if agent, _ := w.cfg.Agent(run.CurrentAgent); agent.Stop.ContentMatch != "" {
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
