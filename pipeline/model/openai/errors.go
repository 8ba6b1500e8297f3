package openai

import (
	"errors"
	"fmt"
	"net/http"
)

// Sentinel errors. Infer and New wrap them with the model's name and the
// detail; test for them with errors.Is.
var (
	// ErrMissingAPIKey: api_key_env is not set, or the environment variable
	// it names is unset or empty. New returns it; the key is never read from
	// anywhere else (not even OPENAI_API_KEY) and never logged.
	ErrMissingAPIKey = errors.New("API key missing")

	// ErrInvalidConfig: the model's configuration has a problem. New joins
	// every problem into one error, each wrapping ErrInvalidConfig.
	ErrInvalidConfig = errors.New("invalid model config")

	// ErrRefused: the model declined to answer: it returned a refusal, or the
	// provider stopped the answer with finish_reason "content_filter".
	ErrRefused = errors.New("the model refused to answer")

	// ErrMalformedResponse: the endpoint answered 2xx with something that is
	// not a usable Chat Completion: not JSON, no choices, a tool call without
	// a name, a stream that ended before a finish_reason.
	ErrMalformedResponse = errors.New("malformed response")

	// ErrTimeout: one attempt took longer than the configured timeout.
	ErrTimeout = errors.New("request timed out")
)

// APIError is an HTTP error status from the endpoint, returned once the SDK
// has stopped retrying: at once for 400, 401, 403, 404 and other permanent
// statuses, after max_retries retries for 408, 409, 429 and 5xx. Message is
// the provider's explanation with the API key, should it appear, redacted.
type APIError struct {
	StatusCode int
	Code       string // the provider's error code, e.g. "invalid_api_key"; may be empty
	Type       string // the provider's error type, e.g. "invalid_request_error"; may be empty
	Message    string

	err error // the SDK's error
}

// Error reads "HTTP 401 Unauthorized (invalid_api_key): Incorrect API key provided".
func (e *APIError) Error() string {
	s := fmt.Sprintf("HTTP %d", e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		s += " " + t
	}
	switch {
	case e.Code != "":
		s += " (" + e.Code + ")"
	case e.Type != "":
		s += " (" + e.Type + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the SDK's error (an *openai.Error of the official SDK).
func (e *APIError) Unwrap() error { return e.err }

// Temporary reports whether the status is one the SDK retries (408, 409,
// 429, 5xx): the retries are spent, but a later attempt may succeed.
func (e *APIError) Temporary() bool {
	switch {
	case e.StatusCode == http.StatusRequestTimeout, e.StatusCode == http.StatusConflict,
		e.StatusCode == http.StatusTooManyRequests, e.StatusCode >= 500:
		return true
	}
	return false
}
