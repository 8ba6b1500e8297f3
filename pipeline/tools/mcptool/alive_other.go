//go:build unix && !linux

package mcptool

import (
	"errors"
	"syscall"
)

// groupAlive reports whether group pgid has a process, zombies included.
func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}
