package store

import (
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
)

// MaxViewBytes bounds a fan-in view (Finished.View): a step whose run and
// calls encode larger (big tool results) goes without one, and its fan-in
// reads the step from Redis. It keeps ToolCallFinished far below Kafka's
// default message limit of 1 MB.
const MaxViewBytes = 64 << 10

// Finished is what FinishCall returns.
type Finished struct {
	// Call is the call as the outcome left it (see FinishCall for what a
	// call that is not parked carries).
	Call pipeline.ToolCall
	// FanIn says whether the step's fan-in is due.
	FanIn bool
	// View is the step as the finish left it, for the fan-in to end the
	// step from without reading it (ADR 0022): set when the call fans in
	// with a terminal outcome, every call of the step is terminal, the run
	// is running that committed step, no decision is held for it and no
	// outcome waits in its outbox, and it encodes in MaxViewBytes; nil
	// otherwise. DecodeView reads it. The script that ends the step checks
	// the state it expects, so a view that has aged (a redelivered
	// message) is refused there, as a snapshot read before a concurrent
	// write would be.
	View json.RawMessage
}

// viewWire is a view as ToolCallFinished carries it: the hashes as their
// field, value pairs, as the script read them.
type viewWire struct {
	Run   []string   `json:"run"`
	IDs   []string   `json:"ids"`
	Calls [][]string `json:"calls"`
}

// encodeView encodes finish_call.lua's view reply ({} when there is none:
// nil), or nil when it is bigger than MaxViewBytes.
func encodeView(v any) (json.RawMessage, error) {
	parts, ok := v.([]any)
	if !ok || len(parts) == 0 {
		return nil, nil
	}
	if len(parts) != 3 {
		return nil, fmt.Errorf("unexpected view of %d parts", len(parts))
	}
	var w viewWire
	var err error
	if w.Run, err = stringList(parts[0]); err != nil {
		return nil, err
	}
	if w.IDs, err = stringList(parts[1]); err != nil {
		return nil, err
	}
	calls, _ := parts[2].([]any)
	if len(calls) != len(w.IDs) {
		return nil, fmt.Errorf("view of %d call ids and %d calls", len(w.IDs), len(calls))
	}
	w.Calls = make([][]string, len(calls))
	for i, c := range calls {
		if w.Calls[i], err = stringList(c); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(w)
	if err != nil || len(b) > MaxViewBytes {
		return nil, err
	}
	return b, nil
}

// DecodeView reads a fan-in view of run runID (Finished.View) as the
// snapshot a reconcile starts from: the run and the calls of its step, no
// decision held, no outcome waiting. Its sweep time is not known (zero).
func DecodeView(runID string, raw json.RawMessage) (Snapshot, error) {
	var w viewWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return Snapshot{}, fmt.Errorf("view of run %s: %w", runID, err)
	}
	if len(w.Calls) != len(w.IDs) || len(w.Run)%2 != 0 {
		return Snapshot{}, fmt.Errorf("view of run %s: %d call ids, %d calls, %d run fields", runID, len(w.IDs), len(w.Calls), len(w.Run))
	}
	snap := Snapshot{HeldKnown: true, Calls: make([]pipeline.ToolCall, len(w.IDs))}
	var err error
	if snap.Run, err = decodeRun(runID, stringPairs(w.Run)); err != nil {
		return Snapshot{}, err
	}
	for i, h := range w.Calls {
		if len(h)%2 != 0 {
			return Snapshot{}, fmt.Errorf("view of run %s: call %s has an odd number of fields", runID, w.IDs[i])
		}
		if snap.Calls[i], err = decodeCall(runID, w.IDs[i], stringPairs(h)); err != nil {
			return Snapshot{}, err
		}
	}
	return snap, nil
}

// stringPairs is a hash as field, value pairs of strings (a view's).
type stringPairs []string

func (p stringPairs) get(field string) string {
	for i := 0; i+1 < len(p); i += 2 {
		if p[i] == field {
			return p[i+1]
		}
	}
	return ""
}
func (p stringPairs) size() int { return len(p) / 2 }

// stringList is a script's array reply of strings.
func stringList(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("unexpected reply %T (want an array)", v)
	}
	out := make([]string, len(list))
	for i, e := range list {
		if out[i], ok = e.(string); !ok {
			return nil, fmt.Errorf("unexpected array entry %d: %T", i, e)
		}
	}
	return out, nil
}
