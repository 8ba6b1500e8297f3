package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"text/tabwriter"
)

// agentView is an agent as GET /v1/agents lists it.
type agentView struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Versions []struct {
		Version string `json:"version"`
		Runs    int    `json:"active_runs"`
	} `json:"versions"`
}

// agents prints GET /v1/agents: a line per version in use of each agent,
// with its runs that are not done, the current version marked; an agent
// with none in use gets one line of its current version.
func agents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("agents", stderr)
	if _, err := parse(fs, args, 0, "no arguments"); err != nil {
		return err
	}
	var list struct {
		Agents    []agentView `json:"agents"`
		Truncated bool        `json:"truncated"`
	}
	if err := newClient(*gw).json(ctx, "GET", "/v1/agents", nil, &list); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tVERSION\tCURRENT\tACTIVE RUNS")
	for _, a := range list.Agents {
		current := a.Version == ""
		for _, v := range a.Versions {
			current = current || v.Version == a.Version
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", a.Name, cmp.Or(v.Version, "(none)"), mark(v.Version == a.Version), v.Runs)
		}
		if !current {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", a.Name, a.Version, mark(true), 0)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if list.Truncated {
		fmt.Fprintln(stdout, "(counted over the oldest 100,000 live runs only)")
	}
	return nil
}

// mark is the CURRENT column: yes for the version new runs get.
func mark(current bool) string {
	if current {
		return "yes"
	}
	return "-"
}
