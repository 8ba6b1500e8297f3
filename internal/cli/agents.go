package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/url"
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

// agents lists the agents and their versions (agentsList), or with
// "upgrade NAME" moves NAME's waiting runs to its current version.
func agents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "upgrade" {
		return agentsUpgrade(ctx, args[1:], stdout, stderr)
	}
	return agentsList(ctx, args, stdout, stderr)
}

// agentsUpgrade posts /v1/agents/NAME/upgrade and says how many runs moved.
func agentsUpgrade(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("agents upgrade", stderr)
	pos, err := parse(fs, args, 1, "NAME")
	if err != nil {
		return err
	}
	var res struct {
		Version   string `json:"version"`
		Upgraded  int    `json:"upgraded"`
		Truncated bool   `json:"truncated"`
	}
	if err := newClient(*gw).json(ctx, "POST", "/v1/agents/"+url.PathEscape(pos[0])+"/upgrade", nil, &res); err != nil {
		return err
	}
	more := ""
	if res.Truncated {
		more = " (only the oldest 100,000 live runs were looked at)"
	}
	_, err = fmt.Fprintf(stdout, "%d waiting runs of %s moved to version %s%s\n", res.Upgraded, pos[0], res.Version, more)
	return err
}

// agentsList prints GET /v1/agents: a line per version in use of each
// agent, with its runs that are not done, the current version marked; an
// agent with none in use gets one line of its current version.
func agentsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
