package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/kafka"
)

// workers are worker processes a bench runs instead of the workers in its
// own process (Options.ToolWorkers, Options.StepWorkers): each is a
// `stepwise toolworker` or `stepwise stepworker` of the bench's
// configuration, on its broker and Redis, so that steps/s and calls/s can
// be told for 1, 2, 4... processes.
type workers struct {
	kind  string // toolworker or stepworker
	procs []proc
	dir   string
}

// proc is one worker: its process, what it said last, and a channel
// closed once it has exited.
type proc struct {
	cmd    *exec.Cmd
	out    *tail
	exited chan struct{}
}

// startWorkers starts n workers of kind (toolworker or stepworker) with
// command (the program and its first arguments) and the configuration
// cfgText, and waits until each holds partitions of topic, as kind's
// consumer group says: a bench that began before would measure the
// rebalances.
func startWorkers(ctx context.Context, s *app.Stack, kind, topic string, command []string, n int, cfgText, kafkaAddr, redisURL string) (*workers, error) {
	if partitions := int(s.Config.Kafka.Partitions); n > partitions {
		return nil, fmt.Errorf("%d %s processes for %d partitions: the ones beyond would get none", n, label(kind), partitions)
	}
	dir, err := os.MkdirTemp("", "stepwise-bench-"+kind+"-")
	if err != nil {
		return nil, err
	}
	w := &workers{kind: kind, dir: dir}
	cfg := filepath.Join(dir, "stepwise.yaml")
	if err := os.WriteFile(cfg, []byte(cfgText), 0o600); err != nil {
		w.close()
		return nil, err
	}
	for range n {
		out := &tail{max: 4 << 10}
		args := append(command[1:len(command):len(command)], "--config", cfg, "--kafka", kafkaAddr, "--redis", redisURL)
		cmd := exec.Command(command[0], args...)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			w.close()
			return nil, fmt.Errorf("start a %s (%s): %w", label(kind), command[0], err)
		}
		p := proc{cmd: cmd, out: out, exited: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(p.exited) }()
		w.procs = append(w.procs, p)
	}
	if err := w.ready(ctx, s, topic, n); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// ready waits until n members of the workers' consumer group hold
// partitions of topic, for at most a minute.
func (w *workers) ready(ctx context.Context, s *app.Stack, topic string, n int) error {
	group := s.ConsumerGroup(w.kind)
	deadline := time.Now().Add(time.Minute)
	for {
		for i, p := range w.procs {
			select {
			case <-p.exited:
				return fmt.Errorf("%s %d of %d exited before it was ready (%v):\n%s", label(w.kind), i+1, n, p.cmd.ProcessState, p.out)
			default:
			}
		}
		got, err := kafka.GroupMembers(ctx, s.Kafka, group, topic)
		if err == nil && got == n {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("after a minute, the consumer group %s cannot be read: %w", group, err)
			}
			return fmt.Errorf("after a minute, %d members of consumer group %s hold partitions of %s, not the %d started (do other %s processes consume it?)", got, group, topic, n, label(w.kind))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// label is kind as people write it: "tool worker" for toolworker.
func label(kind string) string {
	return strings.TrimSuffix(kind, "worker") + " worker"
}

// cpu is the CPU time the workers have used so far, summed, and whether
// the system says.
func (w *workers) cpu() (time.Duration, bool) {
	var sum time.Duration
	for _, p := range w.procs {
		d, ok := pidCPU(p.cmd.Process.Pid)
		if !ok {
			return 0, false
		}
		sum += d
	}
	return sum, true
}

// close stops the workers as an operator would (SIGTERM: they finish
// what they hold), killing those still running after 10 s.
func (w *workers) close() {
	var wg sync.WaitGroup
	for _, p := range w.procs {
		wg.Go(func() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(10 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		})
	}
	wg.Wait()
	_ = os.RemoveAll(w.dir)
}

// tail keeps the last max bytes written to it: what a process said last,
// for the error that says why it stopped.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
