package pipeline

// StepState is where the current step of a running run stands. It is what
// lets every handler tell a fresh message from a duplicate or a stale one.
type StepState string

// The step states, in order.
const (
	StepPending   StepState = "pending"   // StepRequested published, nobody holds the step
	StepInferring StepState = "inferring" // a step worker holds the lease and runs inference
	StepTools     StepState = "tools"     // the assistant turn and its calls are committed
	// StepAwaitingInference: the step's request waits in a batch of its
	// model (batch inference, ADR 0071); nobody holds the step.
	StepAwaitingInference StepState = "awaiting_inference"
)

// stepTransitions is the step's table: a claim takes a pending step (or
// one whose lease expired) to inferring; a commit takes it to tools; a
// step given back (deferred, its lease released) is pending again; the
// end of a step with tools leaves the run's next step pending. A step of a
// model in batch mode parks awaiting its inference, and its answer makes it
// pending again, to be claimed and committed as after a live inference.
var stepTransitions = map[StepState][]StepState{
	StepPending:           {StepInferring},
	StepInferring:         {StepInferring, StepTools, StepPending, StepAwaitingInference},
	StepTools:             {StepPending},
	StepAwaitingInference: {StepPending},
}

// CanTransition reports whether the table allows from → to.
func (from StepState) CanTransition(to StepState) bool {
	for _, next := range stepTransitions[from] {
		if next == to {
			return true
		}
	}
	return false
}
