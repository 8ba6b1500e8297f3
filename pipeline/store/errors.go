package store

import "errors"

// Sentinel errors of the store. Operations wrap them with what was expected
// and what was found.
var (
	// ErrNotFound: no run (or call) with that id.
	ErrNotFound = errors.New("not found")
	// ErrConflict: CreateRun for an existing run_id with a different request,
	// or CommitStep with a call id that already has a record.
	ErrConflict = errors.New("conflict")
	// ErrStale: the state the caller expected no longer holds (another step,
	// another status, already done). The message that asked is a no-op.
	ErrStale = errors.New("stale")
	// ErrLeaseHeld: someone else holds an unexpired lease on the work.
	ErrLeaseHeld = errors.New("lease held by another worker")
	// ErrLeaseLost: the caller's lease was taken over; its result is dropped.
	ErrLeaseLost = errors.New("lease lost")
	// ErrInvalid: the caller passed something the store refuses before it
	// talks to Redis (an empty or brace-carrying id, a malformed cursor, an
	// outcome status a tool worker may not set, JSON that does not parse).
	// Retrying the same call cannot succeed.
	ErrInvalid = errors.New("invalid argument")
)
