//go:build unix

package mcptool

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// ownGroup makes cmd the leader of a new process group, so that what it
// starts (npx starts node, a shell starts its program) can be stopped with
// it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// stopGroup ends what is left of cmd's process group once cmd itself has
// been reaped: SIGTERM, then SIGKILL if anything is still there after grace.
func stopGroup(cmd *exec.Cmd, grace time.Duration) {
	if cmd.Process == nil {
		return
	}
	pgid := cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
		return // nobody left
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !groupAlive(pgid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
