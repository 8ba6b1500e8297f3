package toolworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/secrets"
	"github.com/stepwise-run/stepwise/pipeline/tools"
	"github.com/stepwise-run/stepwise/pipeline/tools/catalog"
	"github.com/stepwise-run/stepwise/pipeline/tools/httptool"
	"github.com/stepwise-run/stepwise/pipeline/tools/mcptool"
)

// CatalogTTL is how long the MCP tools a worker publishes stay in the
// catalog; the worker republishes every third of it.
const CatalogTTL = 90 * time.Second

// executors is what a tool worker can execute: one executor per configured
// tool, and the MCP servers behind the mcp ones.
type executors struct {
	byTool map[string]tools.Tool
	mcp    *mcptool.Manager // nil when no tool uses MCP
}

// newExecutors builds the executor of every configured tool. A tool whose
// executor cannot be built (an HTTP tool whose header variable is unset) is
// an error at start: better a worker that does not start than calls that
// all fail. An HTTP tool redacts its error bodies with redact before it
// cuts them.
func newExecutors(ctx context.Context, cfg *config.Config, redact *secrets.Redactor, log *slog.Logger) (*executors, error) {
	ex := &executors{byTool: map[string]tools.Tool{}}
	var errs []error
	for name, t := range cfg.Tools {
		e := t.Executor
		switch {
		case e.Builtin != "":
			tool, ok := tools.Builtin(e.Builtin)
			if !ok {
				errs = append(errs, fmt.Errorf("tool %s: no builtin %q", name, e.Builtin))
				continue
			}
			ex.byTool[name] = tool
		case e.HTTP != nil:
			tool, err := httptool.New(name, *e.HTTP, httptool.WithRedactor(redact))
			if err != nil {
				errs = append(errs, fmt.Errorf("tool %s: %w", name, err))
				continue
			}
			ex.byTool[name] = tool
		case e.Frontend != nil:
			ex.byTool[name] = tools.Func(func(context.Context, tools.Call) (json.RawMessage, error) {
				return nil, errors.New("a frontend tool is answered by the client's decision, not executed")
			})
		case e.Agent != "":
			ex.byTool[name] = tools.Func(func(context.Context, tools.Call) (json.RawMessage, error) {
				return nil, errors.New("an agent tool is answered by its child run, not executed")
			})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(cfg.MCPServers) > 0 {
		m, err := mcptool.New(ctx, cfg.MCPServers, mcptool.WithLogger(log), mcptool.WithRedactor(redact))
		if err != nil {
			return nil, err
		}
		ex.mcp = m
		for name, t := range cfg.Tools {
			if mc := t.Executor.MCP; mc != nil {
				if tool, ok := m.Tool(mc.Server, mc.Tool); ok {
					ex.byTool[name] = tool
				}
			}
		}
	}
	return ex, nil
}

// close stops the MCP servers.
func (ex *executors) close() {
	if ex.mcp != nil {
		_ = ex.mcp.Close()
	}
}

// publishCatalog keeps the MCP tools' names, descriptions and schemas in the
// catalog, where step workers read them, until ctx ends.
func (ex *executors) publishCatalog(ctx context.Context, cat *catalog.Catalog, cfg *config.Config, log *slog.Logger) {
	if ex.mcp == nil || cat == nil {
		return
	}
	t := time.NewTicker(CatalogTTL / 3)
	defer t.Stop()
	for {
		if err := cat.Publish(ctx, ex.mcp.CatalogSpecs(cfg.Tools), CatalogTTL); err != nil && ctx.Err() == nil {
			log.Error("publish the tool catalog", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// retryable reports whether a tool error may go away on its own: an MCP
// server that is down, or an HTTP tool answering 429 or a 5xx gateway error.
func retryable(err error) bool {
	if errors.Is(err, mcptool.ErrUnavailable) {
		return true
	}
	var se *httptool.StatusError
	if errors.As(err, &se) {
		switch se.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
	}
	return false
}
