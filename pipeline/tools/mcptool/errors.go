package mcptool

import (
	"errors"
	"fmt"
)

// ErrUnavailable is matched (errors.Is) by every *UnavailableError.
var ErrUnavailable = errors.New("MCP server unavailable")

// ErrClosed is the reason given for calls after Manager.Close.
var ErrClosed = errors.New("manager closed")

// UnavailableError is the tool error of a call whose server is not
// connected: it never started, its process exited or its connection
// dropped, and it is being restarted, or the manager is closed. The call
// itself may be fine; a later attempt may succeed.
type UnavailableError struct {
	Server string
	Err    error // why: the last connection failure
}

// Error reads "MCP server <name> unavailable: <why>".
func (e *UnavailableError) Error() string {
	return fmt.Sprintf("MCP server %s unavailable: %v", e.Server, e.Err)
}

// Unwrap returns the reason.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
