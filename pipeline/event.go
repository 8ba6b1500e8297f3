package pipeline

import (
	"encoding/json"
	"time"
)

// EventType names an entry of a run's event log.
type EventType string

// The event types a run's log holds. Each is appended in the same atomic
// operation as the transition it reports.
const (
	EventRunCreated       EventType = "run.created"
	EventRunStarted       EventType = "run.started"
	EventStepStarted      EventType = "step.started"
	EventAssistantMessage EventType = "message.assistant"
	EventTextDelta        EventType = "message.delta" // the model's text as it streams in; data {"text"}
	EventToolCallCreated  EventType = "tool_call.created"
	EventToolCallStarted  EventType = "tool_call.started"
	EventToolCallFinished EventType = "tool_call.finished"
	EventStepEnded        EventType = "step.ended"
	EventStepRetried      EventType = "step.retried"
	EventStepDeferred     EventType = "step.deferred" // a limit of the model holds the step back; data {"until", "reason"}
	EventToolCallRetried  EventType = "tool_call.retried"
	EventRunFinished      EventType = "run.finished" // also with reason suspended: the run waits
	EventRunResumed       EventType = "run.resumed"
	EventToolCallParked   EventType = "tool_call.suspended"
	EventDecisionApplied  EventType = "decision.applied"
	EventDecisionRejected EventType = "decision.rejected"
	EventDecisionHeld     EventType = "decision.held"
	EventRunHandoff       EventType = "run.handoff"       // the step's commit handed the run to another agent; data {"from", "to"}
	EventContextCompacted EventType = "context.compacted" // compaction replaced earlier turns of the prompt by a summary; data builtin.Compacted
	EventActionFailed     EventType = "action.failed"     // a scheduled action failed or could not run where it was aimed; data FailedAction
	EventRunUpgraded      EventType = "run.upgraded"      // an operator moved a waiting run to another version of its agent; data {"from", "to"}

	// EventStepAwaitingInference: the step's request joined its model's
	// open batch (batch inference, ADR 0071); data {"custom_id", "model"}.
	EventStepAwaitingInference EventType = "step.awaiting_inference"
)

// Event is one entry of a run's event log. ID is the log position the store
// assigned (a Redis stream id); it orders events and resumes SSE streams.
type Event struct {
	ID     string          `json:"id,omitempty"`
	Type   EventType       `json:"type"`
	RunID  string          `json:"run_id"`
	Step   int             `json:"step"`
	CallID string          `json:"call_id,omitempty"`
	At     time.Time       `json:"at"`
	Data   json.RawMessage `json:"data,omitempty"`
}
