package config

import "fmt"

// MCPServer is an MCP server tools may be served by: a command speaking MCP
// over stdio, or the URL of a streamable-HTTP endpoint. Exactly one is set.
type MCPServer struct {
	Command []string `json:"command,omitempty"` // program and arguments, e.g. [npx, -y, pkg, stdio]
	URL     string   `json:"url,omitempty"`     // streamable HTTP endpoint
}

func (s MCPServer) check(ps *problems, path string) {
	switch {
	case len(s.Command) == 0 && s.URL == "":
		ps.add(path, "set exactly one of command, url; none is set")
	case len(s.Command) > 0 && s.URL != "":
		ps.add(path, "set exactly one of command, url; both are set")
	case len(s.Command) > 0:
		if s.Command[0] == "" {
			ps.add(fmt.Sprintf("%s[0]", field(path, "command")), "empty program name")
		}
	default:
		checkHTTPURL(ps, field(path, "url"), s.URL)
	}
}
