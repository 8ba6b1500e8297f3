package topics

import "strings"

// DefaultPrefix is the topic prefix when the configuration names none.
const DefaultPrefix = "stepwise."

// DefaultQueue is the tool queue of a tool that names none.
const DefaultQueue = "default"

// Base names of the topics, before the prefix.
const (
	RunSteps           = "run-steps"
	ToolCallsPrefix    = "tool-calls."
	ToolResults        = "tool-results"
	Decisions          = "decisions"
	RunResults         = "run-results"
	DeadLetter         = "dead-letter"
	DecisionOutcomes   = "decision-outcomes"
	RunRequests        = "run-requests"
	RunRequestOutcomes = "run-request-outcomes"
	ApprovalRequests   = "approval-requests"
	RunArchive         = "run-archive"
)

// Names builds full topic names under one prefix. The zero value uses no
// prefix; NewNames("") uses DefaultPrefix.
type Names struct{ prefix string }

// NewNames returns names under prefix, or under DefaultPrefix when it is empty.
func NewNames(prefix string) Names {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return Names{prefix: prefix}
}

// Prefix is what every topic name starts with.
func (n Names) Prefix() string { return n.prefix }

// RunSteps is where StepRequested goes.
func (n Names) RunSteps() string { return n.prefix + RunSteps }

// ToolCalls is the queue topic of tool calls for queue q (DefaultQueue if empty).
func (n Names) ToolCalls(q string) string {
	if q == "" {
		q = DefaultQueue
	}
	return n.prefix + ToolCallsPrefix + q
}

// ToolResults is where ToolCallFinished goes.
func (n Names) ToolResults() string { return n.prefix + ToolResults }

// Decisions is where decisions from anywhere arrive.
func (n Names) Decisions() string { return n.prefix + Decisions }

// RunResults carries each finished run's outcome, for batch consumers.
func (n Names) RunResults() string { return n.prefix + RunResults }

// DecisionOutcomes says what became of each decision.
func (n Names) DecisionOutcomes() string { return n.prefix + DecisionOutcomes }

// RunRequests is where runs are requested from Kafka (RunRequested).
func (n Names) RunRequests() string { return n.prefix + RunRequests }

// RunRequestOutcomes says what became of each run request.
func (n Names) RunRequestOutcomes() string { return n.prefix + RunRequestOutcomes }

// ApprovalRequests announces each parking of a call (ApprovalRequested).
func (n Names) ApprovalRequests() string { return n.prefix + ApprovalRequests }

// RunArchive holds each archived run's record (RunArchived), compacted:
// the last record per run id is kept (runs.archive to: topic).
func (n Names) RunArchive() string { return n.prefix + RunArchive }

// DeadLetter receives messages no handler could accept, with the reason.
func (n Names) DeadLetter() string { return n.prefix + DeadLetter }

// Queue returns the queue of a tool-calls topic, and false for other topics.
func (n Names) Queue(topic string) (string, bool) {
	return strings.CutPrefix(topic, n.prefix+ToolCallsPrefix)
}

// Static lists the topics every deployment has, without the tool queues.
func (n Names) Static() []string {
	return []string{n.RunSteps(), n.ToolResults(), n.Decisions(), n.RunResults(), n.DeadLetter(), n.DecisionOutcomes(),
		n.RunRequests(), n.RunRequestOutcomes(), n.ApprovalRequests()}
}

// Optional lists the topics a deployment has when a setting asks for
// them: run-archive (runs.archive to: topic).
func (n Names) Optional() []string { return []string{n.RunArchive()} }
