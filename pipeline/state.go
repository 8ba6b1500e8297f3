package pipeline

import "encoding/json"

// StateUpdate sets a run's persistent plugin state key to Value; a nil
// Value deletes it. Updates are committed with the step that made them.
type StateUpdate struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value,omitempty"`
}
