package topics

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
)

// SchemaVersion is the version this build writes in every message's "v".
// Messages without "v" are read as version 1; newer versions are refused.
const SchemaVersion = 1

// Header carries what every message has: its schema version and its run.
type Header struct {
	V     int    `json:"v"`
	RunID string `json:"run_id"`
}

func (h Header) check() error {
	var errs []error
	if h.V > SchemaVersion {
		errs = append(errs, fmt.Errorf("schema version %d is newer than %d", h.V, SchemaVersion))
	}
	if h.V < 0 {
		errs = append(errs, fmt.Errorf("schema version %d is negative", h.V))
	}
	if h.RunID == "" {
		errs = append(errs, errors.New("run_id is missing"))
	}
	return errors.Join(errs...)
}

func (h Header) key() string { return h.RunID }

// StepRequested asks a step worker to run step Step of run RunID. Topic: run-steps.
type StepRequested struct {
	Header
	Step int `json:"step"`
	// Tenant, when set, is the run's tenant: a hint that lets a step
	// worker whose pool is full defer the step of a tenant above its share
	// instead of waiting for a slot (ADR 0048). The claim reads the run's
	// own tenant; a wrong hint only misplaces one request.
	Tenant string `json:"tenant,omitempty"`
}

// Validate reports every problem of the message at once.
func (m StepRequested) Validate() error {
	return errors.Join(m.check(), nonNegative("step", m.Step))
}

// ToolCallRequested asks a tool worker of the call's queue to execute it.
// It names the call and carries no arguments: the worker executes what the
// store holds, so the record's size is bounded by its ids whatever the
// arguments' (ADR 0050). Topic: tool-calls.<queue>.
//
// Siblings, when above 0, is how many other calls of the step were
// published with this one to the same queue: a hint that the claim of the
// first of them may take the others with it (ADR 0025). Without it, a
// call is claimed alone.
type ToolCallRequested struct {
	Header
	Step     int    `json:"step"`
	CallID   string `json:"call_id"`
	Tool     string `json:"tool"`
	Siblings int    `json:"siblings,omitempty"`
}

// Validate reports every problem of the message at once.
func (m ToolCallRequested) Validate() error {
	return errors.Join(m.check(), nonNegative("step", m.Step), required("call_id", m.CallID), required("tool", m.Tool),
		nonNegative("siblings", m.Siblings))
}

// ToolCallFinished reports that a call reached a status the StepEnd handler
// must look at (terminal or suspended). Topic: tool-results. The handler
// reads the step from the store (ADR 0054); the message only says which.
type ToolCallFinished struct {
	Header
	Step   int                     `json:"step"`
	CallID string                  `json:"call_id"`
	Status pipeline.ToolCallStatus `json:"status"`
}

// Validate reports every problem of the message at once.
func (m ToolCallFinished) Validate() error {
	errs := []error{m.check(), nonNegative("step", m.Step), required("call_id", m.CallID)}
	if _, err := pipeline.ParseToolCallStatus(string(m.Status)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Decision actions.
const (
	ActionResume    = "resume"     // resume the suspended call call_id
	ActionCancel    = "cancel"     // cancel the suspended call call_id; the run goes on
	ActionCancelRun = "cancel_run" // end the whole run cancelled; call_id is not used
)

// Decision resumes or cancels a suspended call, or cancels a whole run.
// Anyone may publish it to the decisions topic, keyed by run_id. Topic:
// decisions.
type Decision struct {
	Header
	DecisionID string          `json:"decision_id"`
	CallID     string          `json:"call_id"`
	Action     string          `json:"action"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	ArgsHash   string          `json:"args_hash,omitempty"`
	DecidedBy  string          `json:"decided_by,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	// Producer names who signed the decision, and Signature is its
	// HMAC-SHA256 (hex) over SigningBytes with that producer's key; both
	// are needed where decisions.require_signature is on (signature.go).
	Producer  string `json:"producer,omitempty"`
	Signature string `json:"signature,omitempty"`
}

func (m *Decision) sign(producer, signature string) { m.Producer, m.Signature = producer, signature }

// Validate reports every problem of the message at once.
func (m Decision) Validate() error {
	errs := []error{m.check(), required("decision_id", m.DecisionID)}
	switch m.Action {
	case ActionResume, ActionCancel:
		errs = append(errs, required("call_id", m.CallID))
	case ActionCancelRun:
	default:
		errs = append(errs, fmt.Errorf("action %q is not %q, %q or %q", m.Action, ActionResume, ActionCancel, ActionCancelRun))
	}
	return errors.Join(errs...)
}

// The outcomes of a decision.
const (
	OutcomeApplied  = "applied"
	OutcomeHeld     = "held"
	OutcomeRejected = "rejected"
)

// DecisionOutcome says what became of a decision: applied, held (its call
// has not parked yet; a second outcome follows, applied or rejected) or
// rejected, with the reason. Every decision gets one (two when held); a
// duplicate of a decision gets none. Delivery is at least once: consumers
// keep the first message per (decision_id, outcome). Topic:
// decision-outcomes, keyed by run_id.
type DecisionOutcome struct {
	Header
	DecisionID string `json:"decision_id"`
	CallID     string `json:"call_id,omitempty"`
	Outcome    string `json:"outcome"`
	Reason     string `json:"reason,omitempty"`
}

// Validate reports every problem of the message at once.
func (m DecisionOutcome) Validate() error {
	errs := []error{m.check(), required("decision_id", m.DecisionID)}
	switch m.Outcome {
	case OutcomeApplied, OutcomeHeld, OutcomeRejected:
	default:
		errs = append(errs, fmt.Errorf("outcome %q is not %q, %q or %q", m.Outcome, OutcomeApplied, OutcomeHeld, OutcomeRejected))
	}
	return errors.Join(errs...)
}

// RunResult is a finished run's outcome, published once the run is done.
// Delivery is at least once: consumers keep the first result per run_id.
// A result that would be over the broker's message size limit with the
// run's metadata is published without it, MetadataOmitted set (the
// metadata stays readable at GET /v1/runs/{id}; ADR 0050). Topic:
// run-results.
type RunResult struct {
	Header
	Agent       string               `json:"agent"`
	Status      pipeline.RunStatus   `json:"status"`
	Step        int                  `json:"step"`
	Termination pipeline.Termination `json:"termination"`
	Usage       pipeline.Usage       `json:"usage"`
	Metadata    json.RawMessage      `json:"metadata,omitempty"` // the run's metadata, as its creator gave it
	BatchID     string               `json:"batch_id,omitempty"` // the batch it was created in (POST /v1/runs/batch)
	// MetadataOmitted says the run has metadata that was left out because
	// the result would not fit the broker's message size limit with it.
	MetadataOmitted bool `json:"metadata_omitted,omitempty"`
}

// Validate reports every problem of the message at once.
func (m RunResult) Validate() error {
	return errors.Join(m.check(), required("termination.reason", string(m.Termination.Reason)))
}

func required(field, v string) error {
	if v == "" {
		return fmt.Errorf("%s is missing", field)
	}
	return nil
}

func nonNegative(field string, v int) error {
	if v < 0 {
		return fmt.Errorf("%s is %d, want ≥ 0", field, v)
	}
	return nil
}
