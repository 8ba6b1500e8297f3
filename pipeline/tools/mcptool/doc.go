// Package mcptool executes tools served by MCP servers: the `mcp` executor of
// the configuration, and the `mcp_servers` it names.
//
// A Manager connects to every configured server — a command spoken to over
// stdio, or a streamable-HTTP URL — lists its tools, and hands out
// executors:
//
//	m, err := mcptool.New(ctx, cfg.MCPServers, mcptool.WithLogger(log))
//	defer m.Close()
//	t, ok := m.Tool("everything", "get-sum") // a tools.Tool
//	out, err := t.Execute(ctx, call)
//
//	// what tool workers publish for step workers (see package catalog)
//	err = cat.Publish(ctx, m.CatalogSpecs(cfg.Tools), ttl)
//
// A call is a tools/call with the call's arguments, and with
// {"stepwise.run/idempotency_key": "<run_id>:<call_id>",
// "stepwise.run/attempt": n} in its _meta. Its result is the tool's
// structuredContent when present, else its text content joined with
// newlines, as a JSON string. A result flagged isError, or a JSON-RPC error
// of the server, is a tool error with the server's text.
//
// Supervision: a server whose process exits, or whose connection drops (a
// failed keep-alive ping, a session the server no longer knows), is
// restarted with exponential backoff and jitter, for as long as the manager
// lives. Meanwhile its calls fail at once with an *UnavailableError, "MCP
// server <name> unavailable: <why>", the why including the last line the
// process wrote to stderr. A process is started in a process group of its
// own, so what it starts (npx starts node) is stopped with it. A server
// whose tool list changes (notifications/tools/list_changed) is listed again.
//
// Close ends every session and process and waits for them.
package mcptool
