package pipeline

import "encoding/json"

// StateUpdate sets a run's persistent plugin state key to Value; a nil
// Value deletes it. Updates are committed with the step that made them.
type StateUpdate struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value,omitempty"`
}

// FailedAction records a scheduled action that failed: its handler
// returned an error, or it could not run where it was aimed (another
// process, a later step, no handler). It is not retried.
type FailedAction struct {
	Phase Phase  `json:"phase"`
	Key   string `json:"key"`
	Error string `json:"error"`
}
