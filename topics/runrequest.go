package topics

import (
	"encoding/json"
	"errors"
	"fmt"
)

// RunRequested asks for a run, from Kafka instead of POST /v1/runs: the
// route's body (agent, input, model, metadata, start_at, inference) plus "v", with run_id
// required (it is the idempotency key, and the record's key) and an
// optional batch_id naming the batch the run joins (GET /v1/batches/{id}),
// and an optional rerun_of naming the run it re-runs (POST /v1/runs/rerun
// publishes these): the new run is in that run's tenant, and only a
// request of that tenant, or one the gateway signed, may name it.
// The gateway validates it exactly as the route validates its body, and
// admits it only while the deployment has room (run_requests). Producer
// and Signature sign it as a Decision is signed (SigningBytes, Sign);
// with decisions.require_signature an unsigned request is refused, and a
// signed one runs in its producer's tenant. Anyone may publish it, keyed by
// run_id. Topic: run-requests.
type RunRequested struct {
	Header
	Agent     string          `json:"agent"`
	Input     json.RawMessage `json:"input,omitempty"`
	Model     json.RawMessage `json:"model,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	BatchID   string          `json:"batch_id,omitempty"`
	RerunOf   string          `json:"rerun_of,omitempty"`
	StartAt   string          `json:"start_at,omitempty"`  // RFC 3339: the run waits, created, until then
	Inference string          `json:"inference,omitempty"` // batch or live (batch inference); "": the model's default
	Producer  string          `json:"producer,omitempty"`
	Signature string          `json:"signature,omitempty"`
}

// RunRequestFields are the fields of a RunRequested that are not the body
// of POST /v1/runs: what the gateway takes off before it validates the
// rest as that route does.
var RunRequestFields = []string{"v", "batch_id", "rerun_of", "producer", "signature"}

// Validate reports every problem of the message at once. Only what makes
// it a request is checked here: its run_id and version. The body is the
// gateway's to judge, as over HTTP, and a bad one gets a RunRequestOutcome.
func (m RunRequested) Validate() error { return m.check() }

func (RunRequested) fromOutside() {}

func (m *RunRequested) sign(producer, signature string) {
	m.Producer, m.Signature = producer, signature
}

// The outcomes of a run request.
const (
	RequestCreated   = "created"
	RequestDuplicate = "duplicate"
	RequestRejected  = "rejected"
)

// RunRequestOutcome says what became of a RunRequested: created (the run
// exists and is queued), duplicate (the same request was seen before: its
// run is unchanged) or rejected, with Code, the error code POST /v1/runs
// answers for the same refusal (invalid_request, conflict, unauthorized,
// ...), and Reason, its message. Delivery is at least once: a request
// redelivered after its answer was published is answered again, as a
// duplicate. Topic: run-request-outcomes, keyed by run_id.
type RunRequestOutcome struct {
	Header
	BatchID string `json:"batch_id,omitempty"`
	Outcome string `json:"outcome"`
	Code    string `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Validate reports every problem of the message at once.
func (m RunRequestOutcome) Validate() error {
	errs := []error{m.check()}
	switch m.Outcome {
	case RequestCreated, RequestDuplicate:
	case RequestRejected:
		errs = append(errs, required("code", m.Code))
	default:
		errs = append(errs, fmt.Errorf("outcome %q is not %q, %q or %q", m.Outcome, RequestCreated, RequestDuplicate, RequestRejected))
	}
	return errors.Join(errs...)
}
