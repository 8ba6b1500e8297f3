//go:build !unix

package mcptool

import (
	"os/exec"
	"time"
)

// ownGroup does nothing where process groups are not available.
func ownGroup(*exec.Cmd) {}

// stopGroup does nothing where process groups are not available: only the
// command itself is stopped, by the MCP SDK.
func stopGroup(*exec.Cmd, time.Duration) {}
