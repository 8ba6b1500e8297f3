package pipeline

// Phase is one of the nine points of a run where plugins hook in.
type Phase string

// The nine phases, in the order a step passes through them.
const (
	PhaseRunStart          Phase = "run_start"           // stepworker, first step only
	PhaseStepStart         Phase = "step_start"          // stepworker
	PhaseBeforeInference   Phase = "before_inference"    // stepworker
	PhaseAfterInference    Phase = "after_inference"     // stepworker
	PhaseToolGate          Phase = "tool_gate"           // stepworker, per call, serially
	PhaseBeforeToolExecute Phase = "before_tool_execute" // toolworker, only for calls that execute
	PhaseAfterToolExecute  Phase = "after_tool_execute"  // toolworker
	PhaseStepEnd           Phase = "step_end"            // stepworker
	PhaseRunEnd            Phase = "run_end"             // stepworker, once per run
)

// InToolWorker reports whether the tool worker runs the phase; the step
// worker runs the others.
func (p Phase) InToolWorker() bool {
	return p == PhaseBeforeToolExecute || p == PhaseAfterToolExecute
}
