package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/secrets"
	"github.com/stepwise-run/stepwise/pipeline/tools"
	"github.com/stepwise-run/stepwise/pipeline/tools/catalog"
)

// Defaults of the options.
const (
	DefaultMinBackoff     = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultConnectTimeout = time.Minute // npx may download a package first
	DefaultKeepAlive      = 15 * time.Second
	DefaultStopTimeout    = 2 * time.Second
)

// Spec is what a server says about one of its tools.
type Spec struct {
	Server      string
	Tool        string // the tool's name on the server
	Description string
	InputSchema json.RawMessage // the server's JSON Schema of the arguments
}

// Key names a server's tool in the map Specs returns: "<server>/<tool>".
func Key(server, tool string) string { return server + "/" + tool }

// Option configures a Manager.
type Option func(*options)

type options struct {
	log            *slog.Logger
	minBackoff     time.Duration
	maxBackoff     time.Duration
	connectTimeout time.Duration
	keepAlive      time.Duration
	httpClient     *http.Client
	stopTimeout    time.Duration
	redact         *secrets.Redactor
}

// WithLogger sets the logger (default slog.Default()). Servers' stderr lines
// are logged at debug level; connections and restarts at info and warn.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithRedactor redacts each line of a server's stderr with r before the
// line is cut for the log and for error messages, so that a secret across
// the cut is redacted whole. The default (nil) redacts nothing.
func WithRedactor(r *secrets.Redactor) Option { return func(o *options) { o.redact = r } }

// WithBackoff sets the delays between restarts of a server: the first is
// min, each next one doubles, up to max (defaults DefaultMinBackoff,
// DefaultMaxBackoff), with up to a quarter added at random. A server that
// stayed up for max or longer starts again from min.
func WithBackoff(min, max time.Duration) Option {
	return func(o *options) { o.minBackoff, o.maxBackoff = min, max }
}

// WithConnectTimeout bounds one attempt to start a server, complete the MCP
// handshake and list its tools (default DefaultConnectTimeout).
func WithConnectTimeout(d time.Duration) Option { return func(o *options) { o.connectTimeout = d } }

// WithKeepAlive sets how often a connected server is pinged; a failed ping
// counts as a dropped connection (default DefaultKeepAlive; 0 disables).
func WithKeepAlive(d time.Duration) Option { return func(o *options) { o.keepAlive = d } }

// WithStopTimeout sets how long a server process is given to exit once its
// stdin is closed, and again after SIGTERM, before it is killed (default
// DefaultStopTimeout). Whatever else the process started, in its process
// group, is stopped with it.
func WithStopTimeout(d time.Duration) Option { return func(o *options) { o.stopTimeout = d } }

// WithHTTPClient sets the client of streamable-HTTP servers (default
// http.DefaultClient).
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// Manager keeps a connection to each configured MCP server and hands out
// executors for their tools. Its methods are safe for concurrent use.
type Manager struct {
	servers map[string]*server
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// New starts every server: a command is run and spoken to over stdio, a URL
// over streamable HTTP. Each is connected, initialised and asked for its
// tools, and from then on supervised: a process that exits or a connection
// that drops is restarted with backoff, and calls fail with an
// *UnavailableError meanwhile.
//
// New returns once every server has connected or failed its first attempt,
// or when ctx is done, whichever is first; servers still starting, or
// failing, go on being tried in the background (see Unavailable). ctx only
// bounds that wait: the servers live until Close. The only error is a
// configuration that sets neither or both of command and url.
func New(ctx context.Context, servers map[string]config.MCPServer, opts ...Option) (*Manager, error) {
	o := options{
		log:            slog.Default(),
		minBackoff:     DefaultMinBackoff,
		maxBackoff:     DefaultMaxBackoff,
		connectTimeout: DefaultConnectTimeout,
		keepAlive:      DefaultKeepAlive,
		httpClient:     http.DefaultClient,
		stopTimeout:    DefaultStopTimeout,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.minBackoff <= 0 {
		o.minBackoff = DefaultMinBackoff
	}
	if o.maxBackoff < o.minBackoff {
		o.maxBackoff = o.minBackoff
	}
	var errs []error
	for _, name := range sortedNames(servers) {
		s := servers[name]
		switch {
		case len(s.Command) == 0 && s.URL == "":
			errs = append(errs, fmt.Errorf("mcp server %s: set exactly one of command, url; none is set", name))
		case len(s.Command) > 0 && s.URL != "":
			errs = append(errs, fmt.Errorf("mcp server %s: set exactly one of command, url; both are set", name))
		case len(s.Command) > 0 && s.Command[0] == "":
			errs = append(errs, fmt.Errorf("mcp server %s: empty program name", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	life, cancel := context.WithCancel(context.Background())
	m := &Manager{servers: make(map[string]*server, len(servers)), cancel: cancel}
	for name, cfg := range servers {
		s := newServer(life, name, cfg, o)
		m.servers[name] = s
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			s.supervise()
		}()
	}
	for _, s := range m.servers {
		select {
		case <-s.tried:
		case <-ctx.Done():
			return m, nil
		}
	}
	return m, nil
}

// Close stops every server: sessions are closed, processes are asked to exit
// (stdin closed, then SIGTERM, then SIGKILL, as the MCP SDK does) and
// waited for. Calls in flight fail; later calls fail with an
// *UnavailableError wrapping ErrClosed. Close is idempotent.
func (m *Manager) Close() error {
	m.cancel()
	m.wg.Wait()
	return nil
}

// Tool returns the executor of tool on server. ok is false only when server
// is not one of the manager's; whether the server has such a tool is known
// when it is called (a server's tools may change while it runs). The
// executor is safe for concurrent use.
func (m *Manager) Tool(server, tool string) (tools.Tool, bool) {
	s, ok := m.servers[server]
	if !ok {
		return nil, false
	}
	return &executor{server: s, tool: tool}, true
}

// Specs returns the tools of every connected server, keyed by Key(server,
// tool). A server that is not connected contributes the tools it listed
// last, if it ever was; one that never was contributes nothing.
func (m *Manager) Specs() map[string]Spec {
	out := map[string]Spec{}
	for _, s := range m.servers {
		for _, spec := range s.specs() {
			out[Key(spec.Server, spec.Tool)] = spec
		}
	}
	return out
}

// Unavailable returns the servers that are not connected now, each with the
// reason (an *UnavailableError). Empty when all are connected.
func (m *Manager) Unavailable() map[string]error {
	out := map[string]error{}
	for name, s := range m.servers {
		if _, err := s.session(); err != nil {
			out[name] = err
		}
	}
	return out
}

// CatalogSpecs returns the catalog entries of the configured tools served by
// the manager's servers, keyed by tool name: the description and parameters
// of the configuration where it sets them, else those the server lists.
// Tools whose server has not listed them are left out.
func (m *Manager) CatalogSpecs(toolCfg map[string]config.Tool) map[string]catalog.Spec {
	specs := m.Specs()
	out := map[string]catalog.Spec{}
	for name, t := range toolCfg {
		ex := t.Executor.MCP
		if ex == nil {
			continue
		}
		remote := ex.Tool
		if remote == "" {
			remote = name
		}
		spec, ok := specs[Key(ex.Server, remote)]
		if !ok {
			continue
		}
		c := catalog.Spec{Name: name, Description: t.Description, Parameters: t.Parameters}
		if c.Description == "" {
			c.Description = spec.Description
		}
		if len(c.Parameters) == 0 {
			c.Parameters = spec.InputSchema
		}
		out[name] = c
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
