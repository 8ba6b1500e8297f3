package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-run/stepwise/pipeline/tools"
)

// Keys of the _meta object sent with every tools/call, so a server can
// recognise a retry of the same call.
const (
	MetaIdempotencyKey = "stepwise.run/idempotency_key" // <run_id>:<call_id>
	MetaAttempt        = "stepwise.run/attempt"         // the attempt number, from 1
)

// executor calls one tool of one server.
type executor struct {
	server *server
	tool   string
}

// Execute calls the tool with the call's arguments (empty: {}) and returns
// its structuredContent when it has one, else its text content joined with
// newlines as a JSON string (other content kinds are named in brackets, e.g.
// "[image image/png, 3 bytes]"). A result flagged isError is a tool error
// with that text; so is a JSON-RPC error of the server (an unknown tool,
// invalid params). A server that is not connected, or whose connection
// fails during the call (or refuses it while closing), gives an
// *UnavailableError. When ctx ends first, the server is told to cancel and
// an error wrapping ctx's is returned.
func (e *executor) Execute(ctx context.Context, call tools.Call) (json.RawMessage, error) {
	sess, err := e.server.session()
	if err != nil {
		return nil, err
	}
	if _, listed, names := e.server.lookup(e.tool); !listed {
		return nil, fmt.Errorf("MCP server %s has no tool %q (it has: %s)", e.server.name, e.tool, strings.Join(names, ", "))
	}
	args := bytes.TrimSpace(call.Arguments)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		return nil, errors.New("arguments must be a JSON object")
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{
		Meta: mcp.Meta{
			MetaIdempotencyKey: call.RunID + ":" + call.CallID,
			MetaAttempt:        call.Attempt,
		},
		Name:      e.tool,
		Arguments: json.RawMessage(args),
	})
	if err != nil {
		return nil, e.callError(ctx, err)
	}
	if res.IsError {
		msg := text(res.Content)
		if msg == "" {
			msg = "the tool reported an error without a message"
		}
		return nil, errors.New(msg)
	}
	if res.StructuredContent != nil {
		out, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("MCP server %s: tool %s: structured content: %w", e.server.name, e.tool, err)
		}
		return out, nil
	}
	return json.Marshal(text(res.Content))
}

func (e *executor) callError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("MCP server %s: tool %s: %w", e.server.name, e.tool, ctx.Err())
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && !transportCode(rpc.Code) {
		return fmt.Errorf("MCP server %s: tool %s: %s", e.server.name, e.tool, rpc.Message)
	}
	return &UnavailableError{Server: e.server.name, Err: err}
}

// Codes the MCP SDK's JSON-RPC layer gives failures of the connection rather
// than answers of the server (its internal/jsonrpc2 ErrClientClosing,
// ErrServerClosing, ErrRejected).
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

func transportCode(code int64) bool {
	return code == codeClientClosing || code == codeServerClosing || code == codeRejected
}

// text joins the text parts of content, naming the others.
func text(content []mcp.Content) string {
	parts := make([]string, 0, len(content))
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", c.URI))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", c.Resource.URI))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	return strings.Join(parts, "\n")
}
