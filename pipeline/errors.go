package pipeline

import "errors"

// ErrInvalidTransition is returned (wrapped) when a run or a tool call is asked
// to move to a status its transition table does not allow.
var ErrInvalidTransition = errors.New("invalid transition")

// ErrUnknownStatus is returned (wrapped) when a status string names no status.
var ErrUnknownStatus = errors.New("unknown status")
