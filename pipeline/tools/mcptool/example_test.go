package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/tools"
	"github.com/stepwise-run/stepwise/pipeline/tools/mcptool"
)

func Example() {
	// A remote MCP server with one tool, get-sum, over streamable HTTP.
	remote := httptest.NewServer(mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return newHTTPServer() }, nil))
	defer remote.Close()

	m, err := mcptool.New(context.Background(), map[string]config.MCPServer{"remote": {URL: remote.URL}},
		mcptool.WithLogger(testLogger()))
	if err != nil {
		panic(err)
	}
	defer m.Close()

	fmt.Println(m.Specs()[mcptool.Key("remote", "get-sum")].Description)
	t, _ := m.Tool("remote", "get-sum")
	out, err := t.Execute(context.Background(), tools.Call{RunID: "r-1", CallID: "c-1", Attempt: 1, Arguments: json.RawMessage(`{"a":2,"b":3}`)})
	fmt.Println(string(out), err)
	// Output:
	// Returns a + b.
	// {"sum":5} <nil>
}
