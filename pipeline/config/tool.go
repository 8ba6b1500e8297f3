package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"text/template"

	"github.com/stepwise-run/stepwise/topics"
)

// Tool permissions: what the ToolGate does with a call of the tool.
const (
	PermissionAllow = "allow" // execute (default)
	PermissionDeny  = "deny"  // block: the call fails and the run ends blocked
	PermissionAsk   = "ask"   // suspend the call until a decision arrives (when AskWhen holds, if set)
)

// Resume modes: what a resume decision does with a suspended call.
const (
	ResumeReplay              = "replay"                 // execute with the original arguments (default)
	ResumeUseDecisionAsResult = "use_decision_as_result" // the decision payload is the call's result
	ResumePassDecisionToTool  = "pass_decision_to_tool"  // execute with the decision payload as arguments
)

// What the sweeper decides for a suspended call whose approval timed out.
const (
	OnTimeoutCancel = "cancel" // cancel the call; the model is told (default)
	OnTimeoutResume = "resume" // resume it as if approved
)

// Executor kinds, as returned by Executor.Kind.
const (
	ExecutorBuiltin  = "builtin"
	ExecutorHTTP     = "http"
	ExecutorMCP      = "mcp"
	ExecutorFrontend = "frontend"
	ExecutorAgent    = "agent"
	ExecutorPlugin   = "plugin"
)

// Tool is a tool agents may call: what the model is told about it, who
// executes it, on which queue, and what the ToolGate does with its calls.
type Tool struct {
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments, an object schema. Empty
	// means any object; for an MCP tool, the server's schema.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Executor   Executor        `json:"executor"`
	// Queue is the tool-calls queue its calls are published to; default
	// topics.DefaultQueue. Tool workers are scaled per queue.
	Queue string `json:"queue,omitempty"`

	Permission      string   `json:"permission,omitempty"`      // allow (default) | deny | ask
	AskWhen         string   `json:"ask_when,omitempty"`        // condition on args for ask; empty: always ask
	ResumeMode      string   `json:"resume_mode,omitempty"`     // replay (default) | use_decision_as_result | pass_decision_to_tool
	ApprovalTimeout Duration `json:"approval_timeout,omitzero"` // how long a suspended call waits; 0: forever
	OnTimeout       string   `json:"on_timeout,omitempty"`      // cancel (default) | resume
	Timeout         Duration `json:"timeout,omitzero"`          // execution timeout; 0: toolworker.default_timeout
	MaxAttempts     int      `json:"max_attempts,omitempty"`    // claims of one call; 0: stepworker.max_attempts
}

// Executor says who executes a tool. Exactly one field is set.
type Executor struct {
	Builtin  string        `json:"builtin,omitempty"`  // echo | sleep | fail
	HTTP     *HTTPExecutor `json:"http,omitempty"`     // POST the arguments to a URL
	MCP      *MCPExecutor  `json:"mcp,omitempty"`      // call a tool of an MCP server
	Frontend *struct{}     `json:"frontend,omitempty"` // executed by the client (AG-UI, AI SDK)
	// Agent names the agent a call runs as a child run; the call waits
	// for the child's answer (ADR 0060).
	Agent string `json:"agent,omitempty"`
	// Input is the child run's user message as a Go text/template over the
	// call's arguments ({{.document}}); empty: the arguments' JSON. Only
	// with Agent.
	Input string `json:"input,omitempty"`
	// Plugin names the plugin that executes the calls (it registers the
	// tool with plugin.Registrar.Tool, and may return a state command with
	// the result); every agent that lists the tool must enable it.
	Plugin string `json:"plugin,omitempty"`
}

// Kind returns the executor kind that is set (ExecutorBuiltin, …), or ""
// when none is. With more than one set it returns the first of builtin,
// http, mcp, frontend, agent; Validate refuses such a configuration.
func (e Executor) Kind() string {
	if k := e.kinds(); len(k) > 0 {
		return k[0]
	}
	return ""
}

func (e Executor) kinds() []string {
	var k []string
	if e.Builtin != "" {
		k = append(k, ExecutorBuiltin)
	}
	if e.HTTP != nil {
		k = append(k, ExecutorHTTP)
	}
	if e.MCP != nil {
		k = append(k, ExecutorMCP)
	}
	if e.Frontend != nil {
		k = append(k, ExecutorFrontend)
	}
	if e.Agent != "" {
		k = append(k, ExecutorAgent)
	}
	if e.Plugin != "" {
		k = append(k, ExecutorPlugin)
	}
	return k
}

// HTTPExecutor calls an HTTP endpoint with the arguments as the JSON body and
// takes the response body as the result.
type HTTPExecutor struct {
	URL    string `json:"url"`
	Method string `json:"method,omitempty"` // default POST
	// HeadersEnv maps a header name to the environment variable holding its
	// value, so secrets stay out of the file.
	HeadersEnv map[string]string `json:"headers_env,omitempty"`
	Timeout    Duration          `json:"timeout,omitzero"` // 0: the tool's timeout
}

// MCPExecutor calls tool Tool of the MCP server named Server in
// Config.MCPServers.
type MCPExecutor struct {
	Server string `json:"server"`
	Tool   string `json:"tool,omitempty"` // default: the tool's own name
}

func (t *Tool) setDefaults(name string) {
	if t.Queue == "" {
		t.Queue = topics.DefaultQueue
	}
	if t.Permission == "" {
		t.Permission = PermissionAllow
	}
	if t.ResumeMode == "" {
		t.ResumeMode = ResumeReplay
	}
	if t.OnTimeout == "" {
		t.OnTimeout = OnTimeoutCancel
	}
	if h := t.Executor.HTTP; h != nil {
		h.Method = strings.ToUpper(h.Method)
		if h.Method == "" {
			h.Method = "POST"
		}
	}
	if m := t.Executor.MCP; m != nil && m.Tool == "" {
		m.Tool = name
	}
}

func (t Tool) check(ps *problems, path string, cfg *Config) {
	checkParameters(ps, field(path, "parameters"), t.Parameters)
	t.Executor.check(ps, field(path, "executor"), cfg)
	checkQueue(ps, field(path, "queue"), t.Queue, cfg.Kafka.TopicPrefix)
	oneOf(ps, field(path, "permission"), t.Permission, PermissionAllow, PermissionDeny, PermissionAsk)
	if t.AskWhen != "" && t.Permission != PermissionAsk {
		ps.add(field(path, "ask_when"), fmt.Sprintf("only applies with permission %q, not %q", PermissionAsk, t.Permission))
	}
	if t.Executor.Agent != "" && t.Permission == PermissionAsk {
		ps.add(field(path, "permission"), "ask does not apply to an agent tool: its child run's answer is its call's decision")
	}
	oneOf(ps, field(path, "resume_mode"), t.ResumeMode, ResumeReplay, ResumeUseDecisionAsResult, ResumePassDecisionToTool)
	oneOf(ps, field(path, "on_timeout"), t.OnTimeout, OnTimeoutCancel, OnTimeoutResume)
	nonNegativeDuration(ps, field(path, "approval_timeout"), t.ApprovalTimeout)
	nonNegativeDuration(ps, field(path, "timeout"), t.Timeout)
	nonNegative(ps, field(path, "max_attempts"), int64(t.MaxAttempts))
}

// checkParameters accepts an empty schema or a JSON object whose "type", if
// present, is "object".
func checkParameters(ps *problems, path string, raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return
	}
	var schema map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &schema) != nil {
		ps.add(path, "want a JSON Schema mapping with type: object, got "+describe(raw))
		return
	}
	typ, ok := schema["type"]
	if !ok {
		return
	}
	var s string
	if json.Unmarshal(typ, &s) != nil || s != "object" {
		ps.add(field(path, "type"), "want object (tool arguments are an object), got "+describe(typ))
	}
}

func (e Executor) check(ps *problems, path string, cfg *Config) {
	switch kinds := e.kinds(); len(kinds) {
	case 0:
		ps.add(path, "set exactly one of builtin, http, mcp, frontend, agent, plugin; none is set")
		return
	case 1:
	default:
		ps.add(path, "set exactly one of builtin, http, mcp, frontend, agent, plugin; "+strings.Join(kinds, " and ")+" are set")
	}
	if e.Builtin != "" && !slices.Contains(Builtins(), e.Builtin) {
		ps.add(field(path, "builtin"), fmt.Sprintf("unknown builtin %q; want one of %s", e.Builtin, strings.Join(Builtins(), ", ")))
	}
	if h := e.HTTP; h != nil {
		p := field(path, "http")
		checkHTTPURL(ps, field(p, "url"), h.URL)
		switch h.Method {
		case "GET", "POST", "PUT", "PATCH", "DELETE":
		default:
			ps.add(field(p, "method"), fmt.Sprintf("%q; want GET, POST, PUT, PATCH or DELETE", h.Method))
		}
		for _, name := range sortedKeys(h.HeadersEnv) {
			if h.HeadersEnv[name] == "" {
				ps.add(field(field(p, "headers_env"), name), "empty environment variable name")
			}
		}
		nonNegativeDuration(ps, field(p, "timeout"), h.Timeout)
	}
	if m := e.MCP; m != nil {
		p := field(path, "mcp")
		if m.Server == "" {
			ps.add(field(p, "server"), "missing; name a server of mcp_servers")
		} else if _, ok := cfg.MCPServers[m.Server]; !ok {
			ps.add(field(p, "server"), fmt.Sprintf("unknown MCP server %q; define it under mcp_servers", m.Server))
		}
	}
	if e.Agent != "" {
		if _, ok := cfg.Agents[e.Agent]; !ok {
			ps.add(field(path, "agent"), fmt.Sprintf("unknown agent %q; define it under agents", e.Agent))
		}
	}
	if e.Input != "" {
		if e.Agent == "" {
			ps.add(field(path, "input"), "only applies with agent")
		} else if _, err := e.InputTemplate(); err != nil {
			ps.add(field(path, "input"), err.Error())
		}
	}
}

// InputTemplate parses Input: missing keys of the arguments are errors.
func (e Executor) InputTemplate() (*template.Template, error) {
	return template.New("input").Option("missingkey=error").Parse(e.Input)
}

// checkHTTPURL requires an absolute http or https URL.
func checkHTTPURL(ps *problems, path, raw string) {
	if raw == "" {
		ps.add(path, "missing")
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		ps.add(path, err.Error())
		return
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ps.add(path, fmt.Sprintf("%q is not an absolute http or https URL", raw))
	}
}

func oneOf(ps *problems, path, v string, allowed ...string) {
	if !slices.Contains(allowed, v) {
		ps.add(path, fmt.Sprintf("%q; want one of %s", v, strings.Join(allowed, ", ")))
	}
}
