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

	tried     chan struct{} // closed when the first attempt has ended
	triedOnce sync.Once

	mu    sync.Mutex
	sess  *mcp.ClientSession // nil while not connected
	down  error              // why not connected, while sess is nil
	tools map[string]Spec    // by tool name; the last listing
}

func newServer(name string, cfg config.MCPServer, o options) *server {
	o.log = o.log.With("mcp_server", name)
	return &server{
		name:  name,
		cfg:   cfg,
		opts:  o,
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
// backoff, until ctx is done.
func (s *server) supervise(ctx context.Context) {
	delay := s.opts.minBackoff
	for {
		started := time.Now()
		sess, stderr, err := s.connect(ctx)
		if ctx.Err() != nil {
			if sess != nil {
				_ = sess.Close()
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
			err = s.serve(ctx, sess, stderr)
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
func (s *server) serve(ctx context.Context, sess *mcp.ClientSession, stderr *stderrLog) error {
	stop := context.AfterFunc(ctx, func() { _ = sess.Close() })
	defer stop()

	waitErr := sess.Wait()
	closeErr := sess.Close() // for a process: reaps it, and its exit status says why
	var reason error
	switch {
	case stderr != nil && closeErr != nil:
		reason = fmt.Errorf("process ended: %w", closeErr)
	case stderr != nil:
		reason = errors.New("process ended")
	case waitErr != nil:
		reason = fmt.Errorf("connection lost: %w", waitErr)
	default:
		reason = errors.New("connection closed by the server")
	}
	if stderr != nil {
		if line := stderr.lastLine(); line != "" {
			reason = fmt.Errorf("%w (last stderr line: %s)", reason, line)
		}
	}
	s.setDown(reason)
	return reason
}

func (s *server) setDown(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess, s.down = nil, err
}

// connect makes one attempt: start (or reach) the server, initialise, list
// its tools.
func (s *server) connect(ctx context.Context) (*mcp.ClientSession, *stderrLog, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.connectTimeout)
	defer cancel()

	var transport mcp.Transport
	var stderr *stderrLog
	if len(s.cfg.Command) > 0 {
		stderr = &stderrLog{log: s.opts.log}
		cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
		cmd.Stderr = stderr
		cmd.WaitDelay = time.Second // children holding stderr open must not stall a restart
		transport = &mcp.CommandTransport{Command: cmd}
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
		return nil, nil, withStderr(fmt.Errorf("connect: %w", err), stderr)
	}
	listed, err := listTools(ctx, s.name, sess)
	if err != nil {
		_ = sess.Close()
		return nil, nil, withStderr(fmt.Errorf("list tools: %w", err), stderr)
	}
	s.mu.Lock()
	s.tools = listed
	s.mu.Unlock()
	s.opts.log.Info("mcp server connected", "tools", len(listed))
	return sess, stderr, nil
}

// relist refreshes the tool list after the server said it changed.
func (s *server) relist(sess *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.connectTimeout)
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

func withStderr(err error, stderr *stderrLog) error {
	if stderr == nil {
		return err
	}
	if line := stderr.lastLine(); line != "" {
		return fmt.Errorf("%w (last stderr line: %s)", err, line)
	}
	return err
}
