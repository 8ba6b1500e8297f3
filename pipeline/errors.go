package pipeline

import "errors"

// ErrUnknownStatus is returned (wrapped) when a status string names no status.
var ErrUnknownStatus = errors.New("unknown status")
