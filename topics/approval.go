package topics

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// ApprovalRequested announces a parked call: a decider answers it with a
// Decision on the decisions topic (run_id, call_id, args_hash as given
// here), and its close is the call's DecisionOutcome on decision-outcomes
// (the decider's decision applied; or stepwise's own: "timeout:<call_id>@<parked_at ms>"
// when the deadline passed, "cancel:<call_id>" when the run was cancelled
// or ended while it was parked). Every parking publishes one, a call
// parked again after a resume one more. Delivery is at least once: a
// decider keeps the first per (run_id, call_id, parked_at). The fields a
// GET /v1/pending item shows have its names and formats. A request that
// would be over the broker's message size limit with the call's arguments
// and the run's metadata is published without them, ArgumentsOmitted or
// MetadataOmitted set (both stay readable at GET /v1/runs/{id}; ADR 0050,
// 0055). The times are RFC 3339 strings in UTC (Time). Topic: approval-requests, keyed by run_id.
type ApprovalRequested struct {
	Header
	CallID     string              `json:"call_id"`
	Step       int                 `json:"step"`
	Tool       string              `json:"tool"`
	Arguments  json.RawMessage     `json:"arguments,omitempty"` // the call's arguments, which args_hash hashes
	ArgsHash   string              `json:"args_hash"`
	Ticket     string              `json:"ticket"`
	Reason     string              `json:"reason"`
	ResumeMode pipeline.ResumeMode `json:"resume_mode"`
	Deadline   string              `json:"deadline,omitempty"`   // RFC 3339; none: the approval never times out
	OnTimeout  string              `json:"on_timeout,omitempty"` // resume or cancel, at the deadline
	ParkedAt   string              `json:"parked_at"`            // RFC 3339
	Agent      string              `json:"agent"`
	Tenant     string              `json:"tenant,omitempty"`
	Metadata   json.RawMessage     `json:"metadata,omitempty"` // the run's metadata, as its creator gave it
	// ArgumentsOmitted and MetadataOmitted say the call has arguments, or
	// the run metadata, that were left out because the request would not
	// fit the broker's message size limit with them.
	ArgumentsOmitted bool `json:"arguments_omitted,omitempty"`
	MetadataOmitted  bool `json:"metadata_omitted,omitempty"`
}

// Validate reports every problem of the message at once.
func (m ApprovalRequested) Validate() error {
	errs := []error{m.check(), required("call_id", m.CallID), nonNegative("step", m.Step), required("tool", m.Tool),
		required("args_hash", m.ArgsHash), required("ticket", m.Ticket), required("agent", m.Agent)}
	if _, err := pipeline.ParseResumeMode(string(m.ResumeMode)); err != nil || m.ResumeMode == "" {
		errs = append(errs, fmt.Errorf("resume_mode %q is not a resume mode", m.ResumeMode))
	}
	switch m.OnTimeout {
	case "", ActionResume, ActionCancel:
	default:
		errs = append(errs, fmt.Errorf("on_timeout %q is neither %q nor %q", m.OnTimeout, ActionResume, ActionCancel))
	}
	if m.ParkedAt == "" {
		errs = append(errs, errors.New("parked_at is missing"))
	} else if _, err := time.Parse(time.RFC3339Nano, m.ParkedAt); err != nil {
		errs = append(errs, fmt.Errorf("parked_at %q is not an RFC 3339 time", m.ParkedAt))
	}
	if _, err := time.Parse(time.RFC3339Nano, m.Deadline); m.Deadline != "" && err != nil {
		errs = append(errs, fmt.Errorf("deadline %q is not an RFC 3339 time", m.Deadline))
	}
	return errors.Join(errs...)
}

// Time writes t as ApprovalRequested's times are written, the way
// GET /v1/pending writes them (RFC 3339 in UTC, to the nanosecond as
// needed); the zero time is "".
func Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
