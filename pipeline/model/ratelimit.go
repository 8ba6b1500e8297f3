package model

import (
	"net/http"
	"strconv"
	"time"
)

// RateLimitedError is what a provider returns when the model's endpoint
// still refuses with 429 after its own retries. The step worker does not
// fail the run for it: it cools the model down for every worker for
// RetryAfter (when the model has limits) and defers the step.
type RateLimitedError struct {
	RetryAfter time.Duration // what the endpoint asked for; 0 when it did not say
	Err        error
}

func (e *RateLimitedError) Error() string {
	return "rate limited (429), retry after " + e.RetryAfter.String() + ": " + e.Err.Error()
}

func (e *RateLimitedError) Unwrap() error { return e.Err }

// RetryAfter reads a Retry-After header, in seconds or as an HTTP date
// (RFC 9110); 0 when it is absent or unreadable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
