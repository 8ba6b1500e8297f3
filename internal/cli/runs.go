package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"
)

// runSummary is a run as GET /v1/runs lists it.
type runSummary struct {
	RunID       string `json:"run_id"`
	Agent       string `json:"agent"`
	Status      string `json:"status"`
	Step        int    `json:"step"`
	Termination *struct {
		Reason string `json:"reason"`
		Detail string `json:"detail"`
	} `json:"termination"`
	CreatedAt time.Time `json:"created_at"`
}

func runs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: want list, get, watch, cancel or export", errUsage)
	}
	switch args[0] {
	case "list":
		return runsList(ctx, args[1:], stdout, stderr)
	case "get":
		return runsGet(ctx, args[1:], stdout, stderr)
	case "watch":
		return runsWatch(ctx, args[1:], stdout, stderr)
	case "cancel":
		return runsCancel(ctx, args[1:], stdout, stderr)
	case "export":
		return runsExport(ctx, args[1:], stdout, stderr)
	}
	return fmt.Errorf("%w: unknown %q, want list, get, watch, cancel or export", errUsage, args[0])
}

// runsList serves `stepwise runs list`: one page of GET /v1/runs, searched
// as its flags say.
func runsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("runs list", stderr)
	filter := filterFlags(fs)
	filter["tenant"] = fs.String("tenant", "", "runs of this `tenant` (an admin's key; a tenant's key lists its own)")
	filter["cursor"] = fs.String("cursor", "", "the `cursor` a previous page printed")
	limit := fs.Int("limit", 50, "at most this many `runs`")
	meta := metaFlag{}
	fs.Var(meta, "meta", "runs whose metadata has this `KEY=VALUE`, a key of runs.searchable_metadata (repeatable)")
	if _, err := parse(fs, args, 0, "no arguments"); err != nil {
		return err
	}
	q := url.Values{"limit": {fmt.Sprint(*limit)}}
	for k, v := range filter.set() {
		q.Set(k, v)
	}
	for k, v := range meta {
		q.Set("meta."+k, v)
	}
	var page struct {
		Runs       []runSummary `json:"runs"`
		NextCursor string       `json:"next_cursor"`
	}
	if err := newClient(*gw).json(ctx, "GET", "/v1/runs?"+q.Encode(), nil, &page); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tAGENT\tSTATUS\tSTEP\tENDED\tCREATED")
	for _, r := range page.Runs {
		ended := "-"
		if r.Termination != nil {
			ended = r.Termination.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.RunID, r.Agent, r.Status, r.Step, ended, r.CreatedAt.Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.NextCursor != "" {
		fmt.Fprintf(stdout, "more: --cursor %s\n", page.NextCursor)
	}
	return nil
}

func runsGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return getOne(ctx, "runs get", "RUN", "/v1/runs/", args, stdout, stderr)
}

// getOne is a command that takes one id (what) and prints what the gateway
// answers to GET prefix+id, indented.
func getOne(ctx context.Context, name, what, prefix string, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags(name, stderr)
	pos, err := parse(fs, args, 1, what)
	if err != nil {
		return err
	}
	var v json.RawMessage
	if err := newClient(*gw).json(ctx, "GET", prefix+url.PathEscape(pos[0]), nil, &v); err != nil {
		return err
	}
	return writeIndented(stdout, v)
}

// runsWatch prints the run's events, one line each ("TIME TYPE step N
// [call C] DATA"), as they happen, until the run ends (or waits for a decision: the stream says
// so, and ends only when the run does).
func runsWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("runs watch", stderr)
	pos, err := parse(fs, args, 1, "RUN")
	if err != nil {
		return err
	}
	body, err := newClient(*gw).stream(ctx, "/v1/runs/"+url.PathEscape(pos[0])+"/events")
	if err != nil {
		return err
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type   string          `json:"type"`
			Step   int             `json:"step"`
			CallID string          `json:"call_id"`
			At     time.Time       `json:"at"`
			Data   json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			fmt.Fprintln(stdout, data)
			continue
		}
		call := ""
		if ev.CallID != "" {
			call = " call " + ev.CallID
		}
		fmt.Fprintf(stdout, "%s %s step %d%s %s\n", ev.At.Format("15:04:05.000"), ev.Type, ev.Step, call, compact(ev.Data))
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}

func runsCancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("runs cancel", stderr)
	reason := fs.String("reason", "", "why, shown to the model and recorded")
	pos, err := parse(fs, args, 1, "RUN")
	if err != nil {
		return err
	}
	var out struct {
		DecisionID string `json:"decision_id"`
	}
	if err := newClient(*gw).json(ctx, "POST", "/v1/runs/"+url.PathEscape(pos[0])+"/cancel", map[string]string{"reason": *reason}, &out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cancel of run %s accepted (decision %s)\n", pos[0], out.DecisionID)
	return nil
}

func writeIndented(w io.Writer, v json.RawMessage) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
