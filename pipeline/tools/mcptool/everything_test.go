package mcptool_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/tools/mcptool"
)

// envNPX opts in to the test against the MCP project's reference server,
// which npx fetches from the npm registry on first use.
const envNPX = "STEPWISE_TEST_NPX"

func TestManager_with_the_reference_everything_server(t *testing.T) {
	if os.Getenv(envNPX) != "1" {
		t.Skipf("set %s=1 to run against @modelcontextprotocol/server-everything (needs npx and the npm registry)", envNPX)
	}
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("npx is not on PATH")
	}
	m := newManager(t, map[string]config.MCPServer{
		"everything": {Command: []string{"npx", "-y", "@modelcontextprotocol/server-everything", "stdio"}},
	})
	if down := m.Unavailable(); len(down) != 0 {
		t.Fatalf("Unavailable = %v", down)
	}
	spec, ok := m.Specs()[mcptool.Key("everything", "get-sum")]
	if !ok || spec.Description == "" || !strings.Contains(string(spec.InputSchema), `"a"`) {
		t.Fatalf("get-sum spec = %+v (ok %v)", spec, ok)
	}
	got, err := call(t, tool(t, m, "everything", "get-sum"), `{"a": 2, "b": 3}`)
	if err != nil || !strings.Contains(got, "5") {
		t.Fatalf("get-sum = %s, %v", got, err)
	}
	if got, err := call(t, tool(t, m, "everything", "echo"), `{"message": "hello"}`); err != nil || !strings.Contains(got, "hello") {
		t.Fatalf("echo = %s, %v", got, err)
	}
}
