package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

// server is one supervised MCP server.
type server struct {
	name string
	cfg  config.MCPServer
	opts options
	life context.Context // the manager's: done on Close

	tried     chan struct{} // closed when the first attempt has ended
	triedOnce sync.Once

	mu    sync.Mutex
	sess  *mcp.ClientSession // nil while not connected
	down  error              // why not connected, while sess is nil
	tools map[string]Spec    // by tool name; the last listing
}

func newServer(life context.Context, name string, cfg config.MCPServer, o options) *server {
	o.log = o.log.With("mcp_server", name)
	return &server{
		name:  name,
		cfg:   cfg,
		opts:  o,
		life:  life,
		tried: make(chan struct{}),
		down:  errors.New("not connected yet"),
	}
}

// session returns the current session, or why there is none.
func (s *server) session() (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == nil {
		return nil, &UnavailableError{Server: s.name, Err: s.down}
	}
	return s.sess, nil
}

// lookup returns the spec of a listed tool, and the names listed.
func (s *server) lookup(tool string) (Spec, bool, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	spec, ok := s.tools[tool]
	return spec, ok, sortedNames(s.tools)
}

func (s *server) specs() []Spec {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Spec, 0, len(s.tools))
	for _, spec := range s.tools {
		out = append(out, spec)
	}
	return out
}

// supervise connects, waits for the connection to end, and reconnects with
// backoff, until the manager is closed.
func (s *server) supervise() {
	ctx := s.life
	delay := s.opts.minBackoff
	for {
		started := time.Now()
		sess, proc, err := s.connect(ctx)
		if ctx.Err() != nil {
			if sess != nil {
				_ = sess.Close()
			}
			if proc != nil {
				stopGroup(proc.cmd, s.opts.stopTimeout)
			}
			s.setDown(ErrClosed)
			return
		}
		if err != nil {
			s.setDown(err)
			s.triedOnce.Do(func() { close(s.tried) })
			s.opts.log.Warn("mcp server failed to start", "error", err, "retry_in", delay)
		} else {
			s.mu.Lock()
			s.sess, s.down = sess, nil
			s.mu.Unlock()
			s.triedOnce.Do(func() { close(s.tried) })
			err = s.serve(ctx, sess, proc)
			if ctx.Err() != nil {
				s.setDown(ErrClosed)
				return
			}
			if time.Since(started) >= s.opts.maxBackoff {
				delay = s.opts.minBackoff
			}
			s.opts.log.Warn("mcp server connection lost", "error", err, "retry_in", delay)
		}
		t := time.NewTimer(delay + rand.N(delay/4+1))
		select {
		case <-ctx.Done():
			t.Stop()
			s.setDown(ErrClosed)
			return
		case <-t.C:
		}
		delay = min(2*delay, s.opts.maxBackoff)
	}
}

// serve blocks until the connection of the current session sess ends (or ctx
// does, which closes it), then marks the server down. It returns why it
// ended.
func (s *server) serve(ctx context.Context, sess *mcp.ClientSession, proc *process) error {
	stop := context.AfterFunc(ctx, func() { _ = sess.Close() })
	defer stop()

	waitErr := sess.Wait()
	closeErr := sess.Close() // for a process: reaps it, and its exit status says why
	var reason error
	switch {
	case proc != nil && closeErr != nil:
		reason = fmt.Errorf("process ended: %w", closeErr)
	case proc != nil:
		reason = errors.New("process ended")
	case waitErr != nil:
		reason = fmt.Errorf("connection lost: %w", waitErr)
	default:
		reason = errors.New("connection closed by the server")
	}
	if proc != nil {
		stopGroup(proc.cmd, s.opts.stopTimeout)
		reason = proc.explain(reason)
	}
	s.setDown(reason)
	return reason
}

func (s *server) setDown(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess, s.down = nil, err
}

// process is the server process of one connection attempt.
type process struct {
	cmd    *exec.Cmd
	stderr *stderrLog
}

// explain adds the process's last stderr line, which usually says why it
// ended, to err.
func (p *process) explain(err error) error {
	if line := p.stderr.lastLine(); line != "" {
		return fmt.Errorf("%w (last stderr line: %s)", err, line)
	}
	return err
}

// connect makes one attempt: start (or reach) the server, initialise, list
// its tools. proc is nil for a URL.
func (s *server) connect(ctx context.Context) (_ *mcp.ClientSession, _ *process, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.connectTimeout)
	defer cancel()

	var transport mcp.Transport
	var proc *process
	if len(s.cfg.Command) > 0 {
		cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
		proc = &process{cmd: cmd, stderr: &stderrLog{log: s.opts.log, redact: s.opts.redact}}
		cmd.Stderr = proc.stderr
		cmd.WaitDelay = time.Second // children holding stderr open must not stall a restart
		ownGroup(cmd)
		transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: s.opts.stopTimeout}
		defer func() {
			if err != nil { // the SDK has reaped the command; its children may linger
				stopGroup(cmd, s.opts.stopTimeout)
				err = proc.explain(err)
			}
		}()
	} else {
		transport = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.opts.httpClient}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "stepwise", Version: "1"}, &mcp.ClientOptions{
		KeepAlive: s.opts.keepAlive,
		ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) {
			go s.relist(req.Session)
		},
	})
	sess, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	listed, err := listTools(ctx, s.name, sess)
	if err != nil {
		_ = sess.Close()
		return nil, nil, fmt.Errorf("list tools: %w", err)
	}
	s.mu.Lock()
	s.tools = listed
	s.mu.Unlock()
	s.opts.log.Info("mcp server connected", "tools", len(listed))
	return sess, proc, nil
}

// relist refreshes the tool list after the server said it changed.
func (s *server) relist(sess *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(s.life, s.opts.connectTimeout)
	defer cancel()
	listed, err := listTools(ctx, s.name, sess)
	if err != nil {
		s.opts.log.Warn("mcp server tool list changed, but listing failed", "error", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == sess {
		s.tools = listed
	}
}

func listTools(ctx context.Context, server string, sess *mcp.ClientSession) (map[string]Spec, error) {
	out := map[string]Spec{}
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
		}
		if string(schema) == "null" {
			schema = nil
		}
		out[t.Name] = Spec{Server: server, Tool: t.Name, Description: t.Description, InputSchema: schema}
	}
	return out, nil
}
