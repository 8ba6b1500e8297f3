package kafka_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/stepwise-run/stepwise/internal/kafka"
)

// envMember, when set in the environment of the test binary, makes it run
// one consumer-group member (see [runMember]) instead of the tests. Its
// value is a JSON [memberSpec].
const envMember = "STEPWISE_TEST_GROUP_MEMBER"

// memberSpec says what a member process consumes.
type memberSpec struct {
	Brokers []string `json:"brokers"`
	Group   string   `json:"group"`
	Topic   string   `json:"topic"`
}

// runMember is the body of a member process: it subscribes to the topic in
// the group, writes "got <payload>" on stdout for every message before it
// acks it, logs to stderr, and closes its subscriber (leaving the group)
// and exits when stdin reaches its end, so that no member outlives the test
// process. It returns the process exit code.
func runMember(specJSON string) int {
	var spec memberSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "member spec:", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	sub, err := kafka.NewSubscriber(kafka.Plain(spec.Brokers...), spec.Group, watermill.NewSlogLogger(logger))
	if err != nil {
		logger.Error("new subscriber", "err", err)
		return 1
	}
	msgs, err := sub.Subscribe(context.Background(), spec.Topic)
	if err != nil {
		logger.Error("subscribe", "err", err)
		return 1
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		start := time.Now()
		err := sub.Close()
		logger.Info("subscriber closed", "err", err, "took", time.Since(start))
	}()
	for msg := range msgs {
		// One write per line, unbuffered: a line written before the ack
		// reaches the parent even if this process is killed right after.
		if _, err := fmt.Fprintf(os.Stdout, "got %s\n", msg.Payload); err != nil {
			return 1
		}
		msg.Ack()
	}
	return 0
}

// seenSet counts the payloads that members reported.
type seenSet struct {
	mu sync.Mutex
	n  map[string]int
}

func newSeenSet() *seenSet { return &seenSet{n: map[string]int{}} }

func (s *seenSet) add(payload string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[payload]++
}

// missing returns the ids not seen yet.
func (s *seenSet) missing(ids []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range ids {
		if s.n[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

// member is one running member process.
type member struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser // held open: the member exits when it closes
	exited chan struct{}  // closed once the process has been waited for
}

// members runs member processes by slot, re-executing the test binary.
type members struct {
	t      testing.TB
	spec   string
	env    func(slot int) []string
	logDir string
	seen   *seenSet

	mu    sync.Mutex
	procs map[int]*member
	runs  map[int]int // incarnations started per slot
}

// newMembers returns a member runner for spec whose processes report into
// seen and log into files under a temporary directory (or under
// $STEPWISE_TEST_MEMBER_LOGS, kept after the test). env adds environment
// variables to a slot's processes; it may be nil. Every process still
// running when the test ends is killed.
func newMembers(t testing.TB, spec memberSpec, seen *seenSet, env func(slot int) []string) *members {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	logDir := os.Getenv("STEPWISE_TEST_MEMBER_LOGS")
	if logDir == "" {
		logDir = t.TempDir()
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	m := &members{t: t, spec: string(b), env: env, logDir: logDir, seen: seen, procs: map[int]*member{}, runs: map[int]int{}}
	t.Cleanup(func() {
		m.mu.Lock()
		slots := make([]int, 0, len(m.procs))
		for slot := range m.procs {
			slots = append(slots, slot)
		}
		m.mu.Unlock()
		for _, slot := range slots {
			m.kill(slot)
		}
	})
	return m
}

// start starts a process in slot, which must be free.
func (m *members) start(slot int) {
	m.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.procs[slot] != nil {
		m.t.Fatalf("member %d already running", slot)
	}
	m.runs[slot]++
	logPath := filepath.Join(m.logDir, fmt.Sprintf("member-%d.%02d.log", slot, m.runs[slot]))
	logFile, err := os.Create(logPath)
	if err != nil {
		m.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// Members are dynamic unless m.env says otherwise, whatever this
	// process's environment holds.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, kafka.EnvInstanceID+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, envMember+"="+m.spec)
	if m.env != nil {
		cmd.Env = append(cmd.Env, m.env(slot)...)
	}
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		m.t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		m.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("start member %d: %v", slot, err)
	}
	p := &member{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	m.procs[slot] = p
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if payload, ok := strings.CutPrefix(sc.Text(), "got "); ok {
				m.seen.add(payload)
			}
		}
		_ = cmd.Wait() // after the last read, as exec.Cmd.StdoutPipe asks
		_ = logFile.Close()
		close(p.exited)
	}()
}

// kill kills slot's process with SIGKILL, as a crash or an OOM kill would,
// and waits for it to be gone. A free slot is left alone.
func (m *members) kill(slot int) {
	p := m.take(slot)
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func (m *members) take(slot int) *member {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.procs[slot]
	delete(m.procs, slot)
	return p
}

// logErrors logs the errors and warnings the member processes logged, the
// last 20 of them.
func (m *members) logErrors() {
	m.t.Helper()
	files, _ := filepath.Glob(filepath.Join(m.logDir, "member-*.log"))
	var lines []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for l := range strings.Lines(string(b)) {
			if strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") {
				lines = append(lines, filepath.Base(f)+": "+strings.TrimSpace(l))
			}
		}
	}
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	for _, l := range lines {
		m.t.Log(l)
	}
}
