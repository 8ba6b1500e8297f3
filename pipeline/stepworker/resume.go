package stepworker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// checkResume is ToolGate for a resume decision of a parked call, as the
// seeds replay a resumed call through it, judged by ver (the run's agent
// version, or the one the decision moves it to: upgradeOf): it fills
// d.Refuse when a pass_decision_to_tool payload does not fit the tool's
// parameters (the decision is rejected and nothing runs), and d.Block when
// the tool may not run now — denied by policy, or not offered — (the decision
// applies and the call fails blocked, without running). A permission of
// ask passes: the decision is the approval. A use_decision_as_result call
// is not checked: its result is the decision, nothing runs. Plugins'
// ToolGate hooks are not asked again. A call that is not parked is left
// to the store (held, or rejected).
func (w *Worker) checkResume(ctx context.Context, ver *versions.Version, c pipeline.ToolCall, d *store.Decision) {
	if d.Action != store.ActionResume || c.Status != pipeline.CallSuspended || c.Parking == nil {
		return
	}
	mode := c.Parking.ResumeMode
	if mode == pipeline.ResumeUseDecisionAsResult {
		return
	}
	params := paramsOf(w.toolSpecs(ctx, ver, []string{c.Tool}))
	if mode == pipeline.ResumePassDecisionToTool && len(d.Payload) > 0 {
		if err := w.schemas.check(params[c.Tool], d.Payload); err != nil {
			d.Refuse = fmt.Sprintf("the payload does not fit the parameters of %s: %v", c.Tool, err)
			return
		}
		c.Arguments = json.RawMessage(d.Payload)
	}
	if pre := w.precheck(ver, params, c); pre != nil {
		d.Block = pre.Error
		return
	}
	for _, in := range policy(ver, c) {
		if in.Action == pipeline.GateBlock {
			d.Block = in.Reason
			return
		}
	}
}
