package tools

import "errors"

// PendingError is what a tool returns when its work is not done yet and the
// call should park until a decision resumes it (a long external job, a
// callback). It is not a failure.
type PendingError struct{ Reason string }

func (e *PendingError) Error() string { return "pending: " + e.Reason }

// Pending returns a PendingError with the reason.
func Pending(reason string) error { return &PendingError{Reason: reason} }

// IsPending reports whether err asks for the call to park, and why.
func IsPending(err error) (string, bool) {
	var p *PendingError
	if errors.As(err, &p) {
		return p.Reason, true
	}
	return "", false
}
