package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
	"time"
)

func pending(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("pending", stderr)
	agent := fs.String("agent", "", "only calls of runs of this `agent`")
	tool := fs.String("tool", "", "only calls of this `tool`")
	run := fs.String("run", "", "only calls of this `run`")
	if _, err := parse(fs, args, 0, "no arguments"); err != nil {
		return err
	}
	q := url.Values{}
	for k, v := range map[string]string{"agent": *agent, "tool": *tool, "run_id": *run} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var list struct {
		Pending []struct {
			RunID     string          `json:"run_id"`
			CallID    string          `json:"call_id"`
			Tool      string          `json:"tool"`
			Reason    string          `json:"reason"`
			ArgsHash  string          `json:"args_hash"`
			Arguments json.RawMessage `json:"arguments"`
			ParkedAt  time.Time       `json:"parked_at"`
		} `json:"pending"`
	}
	if err := newClient(*gw).json(ctx, "GET", "/v1/pending?"+q.Encode(), nil, &list); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tCALL\tTOOL\tPARKED\tARGS_HASH\tARGUMENTS\tREASON")
	for _, p := range list.Pending {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.RunID, p.CallID, p.Tool, p.ParkedAt.Format(time.RFC3339), p.ArgsHash, p.Arguments, p.Reason)
	}
	return tw.Flush()
}

func decide(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("decide", stderr)
	resume := fs.Bool("resume", false, "resume the call")
	cancel := fs.Bool("cancel", false, "cancel the call (the run goes on; the model is told)")
	payload := fs.String("payload", "", "JSON the call's resume mode uses: its new arguments, or its result")
	argsHash := fs.String("args-hash", "", "the args_hash the decision is for (from pending): a stale decision is refused")
	reason := fs.String("reason", "", "why")
	id := fs.String("id", "", "the decision's id (default: the gateway chooses)")
	pos, err := parse(fs, args, 2, "RUN CALL")
	if err != nil {
		return err
	}
	if *resume == *cancel {
		return fmt.Errorf("%w: give one of --resume and --cancel", errUsage)
	}
	body := map[string]any{"call_id": pos[1], "action": "resume"}
	if *cancel {
		body["action"] = "cancel"
	}
	if *payload != "" {
		if !json.Valid([]byte(*payload)) {
			return fmt.Errorf("%w: --payload is not JSON", errUsage)
		}
		body["payload"] = json.RawMessage(*payload)
	}
	for k, v := range map[string]string{"args_hash": *argsHash, "reason": *reason, "decision_id": *id} {
		if v != "" {
			body[k] = v
		}
	}
	var out struct {
		DecisionID string `json:"decision_id"`
	}
	if err := newClient(*gw).json(ctx, "POST", "/v1/runs/"+url.PathEscape(pos[0])+"/decisions", body, &out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "decision %s for call %s of run %s accepted; decision-outcomes says what became of it\n", out.DecisionID, pos[1], pos[0])
	return nil
}
