package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline/store"
)

// The error codes of the API, in {"error": {"code": ..., "message": ...}}.
// Each goes with one HTTP status.
const (
	CodeInvalidRequest       = "invalid_request"        // 400
	CodeUnauthorized         = "unauthorized"           // 401: no API key, or an unknown one
	CodeForbidden            = "forbidden"              // 403: the key lacks the scope, or the origin is not allowed
	CodeNotFound             = "not_found"              // 404
	CodeRequestTimeout       = "request_timeout"        // 408: the body stalled
	CodeMethodNotAllowed     = "method_not_allowed"     // 405
	CodeConflict             = "conflict"               // 409
	CodePayloadTooLarge      = "payload_too_large"      // 413
	CodeUnsupportedMediaType = "unsupported_media_type" // 415
	CodeTooManyRequests      = "too_many_requests"      // 429: too many event streams open for the key
	CodeInternal             = "internal"               // 500; the detail is logged, not sent
	CodeUnavailable          = "unavailable"            // 503; retrying later may succeed
)

// ErrorBody is the JSON of every error answer. Details, when present, lists
// the problems the message sums up, one per entry (every validation problem
// of a request, or of each batch item). RunID and RunIDs name runs that were
// created even though the request failed afterwards (a publish failure), so
// the client can retry with the same ids (BatchID is their batch);
// DecisionID likewise names a decision whose publish failed.
type ErrorBody struct {
	Error      ErrorDetail `json:"error"`
	RunID      string      `json:"run_id,omitempty"`
	RunIDs     []string    `json:"run_ids,omitempty"`
	BatchID    string      `json:"batch_id,omitempty"`
	DecisionID string      `json:"decision_id,omitempty"`
}

// ErrorDetail is the "error" object of ErrorBody.
type ErrorDetail struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Details []string `json:"details,omitempty"`
}

// apiError is an error answer on its way out.
type apiError struct {
	status int
	body   ErrorBody
}

func (e *apiError) Error() string { return e.body.Error.Code + ": " + e.body.Error.Message }

func apiErr(status int, code, msg string) *apiError {
	return &apiError{status: status, body: ErrorBody{Error: ErrorDetail{Code: code, Message: msg}}}
}

func invalid(format string, args ...any) *apiError {
	return apiErr(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf(format, args...))
}

// invalidAll sums problems up in one message and lists each in details.
func invalidAll(summary string, problems []string) *apiError {
	e := apiErr(http.StatusBadRequest, CodeInvalidRequest, summary+": "+summarize(problems))
	e.body.Error.Details = problems
	return e
}

// summarizeMax is how many problems a message spells out; details has all.
const summarizeMax = 20

// summarize joins problems for a message, the first summarizeMax of them.
func summarize(problems []string) string {
	if len(problems) <= summarizeMax {
		return strings.Join(problems, "; ")
	}
	return fmt.Sprintf("%s; … and %d more (see details)", strings.Join(problems[:summarizeMax], "; "), len(problems)-summarizeMax)
}

var errInternal = apiErr(http.StatusInternalServerError, CodeInternal, "internal error; the gateway log has the detail")

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Del("Content-Length")
	writeJSON(w, e.status, e.body)
}

// fail answers with err: an *apiError as it is, a store error by its kind,
// anything else as a logged 500.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = s.classify(r, what, err)
	}
	writeError(w, ae)
}

// classify maps an error of the store (or another dependency) to an answer:
// not found → 404, conflict → 409, an unreachable or timed-out dependency →
// 503, anything else → 500 with the detail logged.
func (s *Server) classify(r *http.Request, what string, err error) *apiError {
	return s.classifyIn(r.Context(), what, err)
}

// classifyIn is classify for work that is not a request (a run request
// from Kafka), logging in ctx.
func (s *Server) classifyIn(ctx context.Context, what string, err error) *apiError {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apiErr(http.StatusNotFound, CodeNotFound, what+": not found: "+s.gone())
	case errors.Is(err, store.ErrConflict):
		return apiErr(http.StatusConflict, CodeConflict, what+": "+err.Error())
	case errors.Is(err, store.ErrInvalid):
		return apiErr(http.StatusBadRequest, CodeInvalidRequest, what+": "+err.Error())
	case unavailable(err):
		s.log.WarnContext(ctx, "dependency unavailable", "what", what, "err", err)
		return apiErr(http.StatusServiceUnavailable, CodeUnavailable, what+": the store is unavailable, retry later")
	default:
		s.log.ErrorContext(ctx, "internal error", "what", what, "err", err)
		return errInternal
	}
}

// unavailable reports whether err says a dependency could not be reached in
// time (as opposed to a bug or a refused request).
func unavailable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) ||
		errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

// gone says why a run may be missing: with a retention, an ended run
// expires (its keys, all at once) that long after it ended.
func (s *Server) gone() string {
	if r := s.cfg.Store.Retention(); r > 0 {
		d := strings.TrimSuffix(strings.TrimSuffix(r.String(), "0s"), "0m") // 168h, not 168h0m0s
		return "it never existed, or it ended more than " + d + " ago and expired (runs.retention)"
	}
	return "it never existed"
}
