package gateway

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/topics"
)

// MaxDecisionIDLength is the longest decision_id a client may choose.
const MaxDecisionIDLength = 256

// argsHashPattern is what pipeline.ArgsHash produces: a lowercase hex
// SHA-256. A decision quoting anything else could never match its call.
var argsHashPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// DecisionRequest is the body of POST /v1/runs/{id}/decisions: the decision
// message of the Kafka contract, whose run_id comes from the path. A body
// run_id, when given, must equal the path's.
type DecisionRequest struct {
	DecisionID string          `json:"decision_id,omitempty"`
	RunID      string          `json:"run_id,omitempty"`
	CallID     string          `json:"call_id"`
	Action     string          `json:"action"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	ArgsHash   string          `json:"args_hash,omitempty"`
	DecidedBy  string          `json:"decided_by,omitempty"`
	Reason     string          `json:"reason,omitempty"`
}

var decisionFields = []string{"decision_id", "run_id", "call_id", "action", "payload", "args_hash", "decided_by", "reason"}

// DecisionResponse is the 202 answer of POST /v1/runs/{id}/decisions. The
// decision is published, not yet applied: the step worker applies it, or
// rejects it with an event in the run's log (decision.rejected) when the
// call is not suspended, is unknown, or its args_hash does not match.
type DecisionResponse struct {
	DecisionID string `json:"decision_id"`
	RunID      string `json:"run_id"`
	CallID     string `json:"call_id"`
	Status     string `json:"status"` // "accepted"
}

// CancelRequest is the optional body of POST /v1/runs/{id}/cancel.
// DecidedBy defaults to "api".
type CancelRequest struct {
	Reason    string `json:"reason,omitempty"`
	DecidedBy string `json:"decided_by,omitempty"`
}

var cancelFields = []string{"reason", "decided_by"}

// CancelResponse is the 202 answer of POST /v1/runs/{id}/cancel: the cancel
// is published; the run ends cancelled once the step worker applies it.
type CancelResponse struct {
	RunID      string `json:"run_id"`
	DecisionID string `json:"decision_id"`
	Status     string `json:"status"` // "accepted"
}

// statusAccepted is the status of a published decision or cancel.
const statusAccepted = "accepted"

// decidedByAPI is who a cancel is recorded as decided by when the body
// names nobody.
const decidedByAPI = "api"

// postDecision serves POST /v1/runs/{id}/decisions. It checks the body and
// that the run exists, and publishes a topics.Decision keyed by the run; it
// does not look at the call: the step worker judges it against the committed
// state. A publish failure answers 503 with the decision_id, and sending the
// same decision again is safe (a repeated decision_id is a no-op).
func (s *Server) postDecision(w http.ResponseWriter, r *http.Request) {
	runID := r.PathValue("id")
	body, ae := jsonBody(w, r, s.cfg.MaxDecisionBytes)
	if ae != nil {
		writeError(w, ae)
		return
	}
	d, problems := parseDecision(body, runID)
	if len(problems) > 0 {
		writeError(w, invalidAll("invalid decision", problems))
		return
	}
	trace, ok := s.ownedRun(w, r, runID)
	if !ok {
		return
	}
	d.DecidedBy = decidedBy(r, d.DecidedBy)
	if d.DecisionID == "" {
		d.DecisionID = uuid.NewString()
	}
	if ae := s.markLive(r, runID); ae != nil {
		writeError(w, ae)
		return
	}
	if ae := s.publishDecision(r, d, trace); ae != nil {
		writeError(w, ae)
		return
	}
	writeJSON(w, http.StatusAccepted, DecisionResponse{
		DecisionID: d.DecisionID, RunID: runID, CallID: d.CallID, Status: statusAccepted,
	})
}

// markLive makes the run infer live from its next step if its agent's
// model has a batch mode (ADR 0072): a decision through the API is a
// person's, who may be waiting for what the run does next; one from the
// decisions topic (another system) leaves the run's mode alone. Before the
// publish, so the step the decision leads to reads it; a deployment
// without batch agents makes no round trip.
func (s *Server) markLive(r *http.Request, runID string) *apiError {
	if len(s.cfg.BatchAgents) == 0 {
		return nil
	}
	if _, err := s.cfg.Store.MarkLive(r.Context(), runID, s.cfg.BatchAgents); err != nil {
		return s.classify(r, "run "+runID, err)
	}
	return nil
}

// cancelRun serves POST /v1/runs/{id}/cancel: it publishes a cancel_run
// decision for a run that is not done. Whether the run is done is read from
// the store before publishing (best effort: a run that ends meanwhile makes
// the cancel a no-op for the step worker).
func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	runID := r.PathValue("id")
	req, ok := s.cancelRequest(w, r)
	if !ok {
		return
	}
	run, err := s.cfg.Store.GetRun(r.Context(), runID)
	if err != nil {
		s.fail(w, r, "run "+runID, err)
		return
	}
	if !s.visible(w, r, runID, run.Tenant) {
		return
	}
	if run.Status.Final() {
		msg := fmt.Sprintf("run %s is already done", runID)
		if run.Termination != nil {
			msg += fmt.Sprintf(" (termination reason %s)", run.Termination.Reason)
		}
		writeError(w, apiErr(http.StatusConflict, CodeConflict, msg+"; there is nothing to cancel"))
		return
	}
	d := topics.Decision{
		Header:     topics.Header{RunID: runID},
		DecisionID: uuid.NewString(),
		Action:     topics.ActionCancelRun,
		DecidedBy:  cmp.Or(decidedBy(r, req.DecidedBy), decidedByAPI),
		Reason:     req.Reason,
	}
	if ae := s.publishDecision(r, d, run.Trace); ae != nil {
		writeError(w, ae)
		return
	}
	writeJSON(w, http.StatusAccepted, CancelResponse{RunID: runID, DecisionID: d.DecisionID, Status: statusAccepted})
}

// cancelRequest reads the optional body of a cancel; on a bad one it
// answers and returns false.
func (s *Server) cancelRequest(w http.ResponseWriter, r *http.Request) (CancelRequest, bool) {
	if !bodyless(r) {
		if _, ae := mediaType(r, mediaJSON); ae != nil {
			writeError(w, ae)
			return CancelRequest{}, false
		}
	}
	body, ae := readBody(w, r, s.cfg.MaxDecisionBytes)
	if ae != nil {
		writeError(w, ae)
		return CancelRequest{}, false
	}
	req, problems := parseCancel(body)
	if len(problems) > 0 {
		writeError(w, invalidAll("invalid cancel", problems))
		return CancelRequest{}, false
	}
	return req, true
}

// publishDecision publishes d to the decisions topic, keyed by its run,
// in the run's trace (trace, its traceparent). A decision too large for
// the broker is a 413; any other failure is a 503 naming
// the run and, for a call's decision, the decision_id to retry with (a
// cancel is simply sent again: cancelling a run twice is a no-op).
func (s *Server) publishDecision(r *http.Request, d topics.Decision, trace string) *apiError {
	d, err := s.cfg.Signer.sign(d)
	if err == nil {
		err = topics.PublishTraced(s.cfg.Publisher, s.cfg.Names.Decisions(), d, trace)
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, topics.ErrTooLarge) { // the same decision is refused every time
		return apiErr(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
			fmt.Sprintf("decision %s for run %s is too large for the broker (kafka.max_message_bytes): %v", d.DecisionID, d.RunID, err))
	}
	s.log.WarnContext(r.Context(), "publish Decision failed",
		"run_id", d.RunID, "call_id", d.CallID, "decision_id", d.DecisionID, "action", d.Action, "err", err)
	if d.Action == topics.ActionCancelRun {
		ae := apiErr(http.StatusServiceUnavailable, CodeUnavailable,
			fmt.Sprintf("the cancel of run %s could not be published; retry later (a repeated cancel is a no-op)", d.RunID))
		ae.body.RunID = d.RunID
		return ae
	}
	ae := apiErr(http.StatusServiceUnavailable, CodeUnavailable,
		fmt.Sprintf("decision %s for run %s could not be published; retry with this decision_id (a repeat is a no-op)", d.DecisionID, d.RunID))
	ae.body.RunID = d.RunID
	ae.body.DecisionID = d.DecisionID
	return ae
}

// parseDecision decodes and validates a decision body for run runID and
// returns every problem it finds. The decision it returns has no id when the
// client chose none.
func parseDecision(body []byte, runID string) (topics.Decision, []string) {
	fields, problems := decodeObject(body, decisionFields)
	if fields == nil {
		return topics.Decision{}, problems
	}
	d := topics.Decision{Header: topics.Header{RunID: runID}}
	var p []string

	d.DecisionID, p = stringField(fields, "decision_id")
	problems = append(problems, p...)
	if d.DecisionID != "" {
		problems = append(problems, checkDecisionID(d.DecisionID)...)
	}

	bodyRun, p := stringField(fields, "run_id")
	problems = append(problems, p...)
	if bodyRun != "" && bodyRun != runID {
		problems = append(problems, fmt.Sprintf("run_id %q differs from the run of the path, %q (leave it out: the path names the run)", bodyRun, runID))
	}

	d.CallID, p = stringField(fields, "call_id")
	problems = append(problems, p...)
	if len(p) == 0 && d.CallID == "" {
		problems = append(problems, "call_id is missing")
	}

	d.Action, p = stringField(fields, "action")
	problems = append(problems, p...)
	if len(p) == 0 {
		switch d.Action {
		case topics.ActionResume, topics.ActionCancel:
		case "":
			problems = append(problems, fmt.Sprintf("action is missing: give %q or %q", topics.ActionResume, topics.ActionCancel))
		case topics.ActionCancelRun:
			problems = append(problems, fmt.Sprintf("action %q is not taken here: POST /v1/runs/{id}/cancel cancels a run", d.Action))
		default:
			problems = append(problems, fmt.Sprintf("action %q is not %q or %q", d.Action, topics.ActionResume, topics.ActionCancel))
		}
	}

	if raw := fields["payload"]; !isNull(raw) {
		d.Payload = compact(raw)
	}

	d.ArgsHash, p = stringField(fields, "args_hash")
	problems = append(problems, p...)
	if d.ArgsHash != "" && !argsHashPattern.MatchString(d.ArgsHash) {
		problems = append(problems, fmt.Sprintf("args_hash %q is not 64 lowercase hex digits (copy it from GET /v1/pending)", d.ArgsHash))
	}

	d.DecidedBy, p = stringField(fields, "decided_by")
	problems = append(problems, p...)
	d.Reason, p = stringField(fields, "reason")
	problems = append(problems, p...)

	if len(problems) > 0 {
		return topics.Decision{}, problems
	}
	return d, nil
}

// checkDecisionID refuses a decision_id that is too long or holds white
// space or control characters (it is quoted in logs and events).
func checkDecisionID(id string) []string {
	var problems []string
	if len(id) > MaxDecisionIDLength {
		problems = append(problems, fmt.Sprintf("decision_id is %d characters long, at most %d allowed", len(id), MaxDecisionIDLength))
	}
	if strings.IndexFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		problems = append(problems, fmt.Sprintf("decision_id %q holds white space or control characters", id))
	}
	return problems
}

// parseCancel decodes the optional body of a cancel. An empty body is no
// reason and nobody named.
func parseCancel(body []byte) (CancelRequest, []string) {
	if firstByte(body) == 0 {
		return CancelRequest{}, nil
	}
	fields, problems := decodeObject(body, cancelFields)
	if fields == nil {
		return CancelRequest{}, problems
	}
	var req CancelRequest
	var p []string
	req.Reason, p = stringField(fields, "reason")
	problems = append(problems, p...)
	req.DecidedBy, p = stringField(fields, "decided_by")
	problems = append(problems, p...)
	if len(problems) > 0 {
		return CancelRequest{}, problems
	}
	return req, nil
}

// decodeObject decodes body as one JSON object. It returns the object's
// fields and a problem per unknown field, or nil fields and why the body is
// not an object at all (an empty body included: callers that allow one
// check first).
func decodeObject(body []byte, known []string) (map[string]json.RawMessage, []string) {
	var fields map[string]json.RawMessage
	switch firstByte(body) {
	case 0:
		return nil, []string{"the body is empty, want a JSON object"}
	case '{':
		if err := decodeStrict(body, &fields, false); err != nil {
			return nil, []string{err.Error()}
		}
	default:
		if !json.Valid(body) {
			return nil, []string{decodeStrict(body, new(any), false).Error()}
		}
		return nil, []string{fmt.Sprintf("the body is %s, want a JSON object", jsonKind(body))}
	}
	var unknown []string
	for k := range fields {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	var problems []string
	for _, k := range unknown {
		problems = append(problems, fmt.Sprintf("unknown field %q (known: %s)", k, strings.Join(known, ", ")))
	}
	return fields, problems
}
