package topics

import "errors"

// PermanentError marks a handler error that no retry can mend (an unknown
// tool, a message that contradicts the store in a way no later state fixes).
// The router sends such messages to the dead-letter topic with the error as
// the reason, like malformed ones, and moves on.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err as a PermanentError; nil stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err is malformed input or a PermanentError:
// whether its message belongs in the dead-letter topic.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.Is(err, ErrMalformed) || errors.As(err, &p)
}
