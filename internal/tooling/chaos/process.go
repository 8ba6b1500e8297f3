package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// crashRestartDelay is how long a supervised process that exited by itself
// stays down before it is started again.
const crashRestartDelay = time.Second

// process is one program the harness runs as an OS process. Each instance
// runs in a process group of its own (so a kill -9 takes the group, and a
// Ctrl-C in the terminal reaches only the harness, which then kills every
// group), and dies with the harness (Pdeathsig) should the harness itself be
// killed. Output goes to a log file, appended across restarts.
//
// A supervised process that exits without the harness killing it is counted
// as a crash and started again after crashRestartDelay. Its methods are safe
// for concurrent use.
type process struct {
	name      string
	program   string // programStepWorker, programToolWorker, …
	path      string
	args      []string
	env       []string
	logPath   string
	supervise bool
	logf      func(format string, args ...any)

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{} // closed when the current instance has exited
	killed   bool          // the harness killed the current instance
	closed   bool          // stopped for good: never started again
	starts   int
	crashes  int
	lastExit string
}

// start starts a new instance. It fails when one is running or the process
// was closed.
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startLocked()
}

func (p *process) startLocked() error {
	if p.closed {
		return fmt.Errorf("%s: closed", p.name)
	}
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.name)
	}
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: log: %w", p.name, err)
	}
	defer log.Close() // the child has its own copy
	fmt.Fprintf(log, "=== chaos: start %d of %s at %s\n", p.starts+1, p.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd, p.done, p.killed = cmd, make(chan struct{}), false
	p.starts++
	go p.wait(cmd, p.done)
	return nil
}

// wait reaps an instance and restarts a supervised one that crashed.
func (p *process) wait(cmd *exec.Cmd, done chan struct{}) {
	err := cmd.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cmd = nil
	close(done)
	p.lastExit = exitText(err)
	if p.killed || p.closed {
		return
	}
	p.crashes++
	p.logf("%s exited by itself (%s); see %s", p.name, p.lastExit, p.logPath)
	if !p.supervise {
		return
	}
	time.AfterFunc(crashRestartDelay, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.cmd == nil && !p.closed {
			if err := p.startLocked(); err != nil {
				p.logf("restart %s: %v", p.name, err)
			}
		}
	})
}

func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	if err != nil {
		return err.Error()
	}
	return "exit status 0"
}

// kill sends SIGKILL to the current instance's process group and waits
// until it has exited. It reports false when nothing was running.
func (p *process) kill() bool {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	if cmd == nil {
		p.mu.Unlock()
		return false
	}
	p.killed = true
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	p.mu.Unlock()
	<-done
	return true
}

// terminate stops the current instance as a deployment does: SIGTERM to
// the process (not its group), then up to within for it to exit; past that
// it is killed with SIGKILL, its group too, and waited for. It is not
// restarted: the caller starts the replacement. ran is false when nothing
// was running; graceful is false when it had to be killed; took is from
// the SIGTERM to the exit.
func (p *process) terminate(within time.Duration) (ran, graceful bool, took time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	if cmd == nil {
		p.mu.Unlock()
		return false, false, 0
	}
	p.killed = true
	sent := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	p.mu.Unlock()
	select {
	case <-done:
		return true, true, time.Since(sent)
	case <-time.After(within):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	return true, false, time.Since(sent)
}

// quit sends SIGQUIT to the current instance (the process, not its group)
// and keeps it from being restarted when it exits.
func (p *process) quit() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.cmd != nil {
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	}
}

// running reports whether an instance is running.
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// exited returns a channel closed when the current instance exits (closed
// already when none runs).
func (p *process) exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return p.done
}

// close kills the current instance, if any, and keeps the process from
// being started again.
func (p *process) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.kill()
}

// lastExitText says how the last instance exited.
func (p *process) lastExitText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastExit
}

// counts returns how often the process was started and how often it exited
// by itself.
func (p *process) counts() (starts, crashes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts, p.crashes
}
