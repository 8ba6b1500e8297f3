package pipeline

// StepState is where the current step of a running run stands. It is what
// lets every handler tell a fresh message from a duplicate or a stale one.
type StepState string

// The three step states, in order.
const (
	StepPending   StepState = "pending"   // StepRequested published, nobody holds the step
	StepInferring StepState = "inferring" // a step worker holds the lease and runs inference
	StepTools     StepState = "tools"     // the assistant turn and its calls are committed
)
