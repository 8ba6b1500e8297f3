package plugin

import (
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Command is what a hook or an action handler returns: state updates and
// actions to schedule. The zero value changes nothing.
type Command struct {
	Updates []Update
	Actions []Action
}

// Update sets a state key to Value; a nil Value deletes it.
type Update = pipeline.StateUpdate

// Action is a scheduled action: the key of its handler and its payload.
type Action struct {
	Key     string          `json:"key"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Set schedules an update of key to v.
func (c *Command) Set(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("state %s: %w", key, err)
	}
	c.Updates = append(c.Updates, Update{Key: key, Value: b})
	return nil
}

// Delete schedules the removal of key.
func (c *Command) Delete(key string) { c.Updates = append(c.Updates, Update{Key: key}) }

// Schedule schedules the action key with payload.
func (c *Command) Schedule(key string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("action %s: %w", key, err)
	}
	c.Actions = append(c.Actions, Action{Key: key, Payload: b})
	return nil
}

// Key is a typed state key. Persistent keys are checkpointed with the run;
// the others live for one phase run in one process.
type Key[T any] struct {
	Name       string
	Persistent bool
}

// Get reads the key from state; ok is false when it is not set.
func (k Key[T]) Get(s State) (v T, ok bool, err error) {
	raw, ok := s[k.Name]
	if !ok {
		return v, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, true, fmt.Errorf("state %s: %w", k.Name, err)
	}
	return v, true, nil
}

// Set schedules an update of the key to v in cmd.
func (k Key[T]) Set(cmd *Command, v T) error { return cmd.Set(k.Name, v) }

// State is a run's plugin state as hooks see it: key → JSON value.
type State map[string]json.RawMessage

func (s State) apply(updates []Update) {
	for _, u := range updates {
		if u.Value == nil {
			delete(s, u.Key)
			continue
		}
		s[u.Key] = u.Value
	}
}
