package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// inferenceJobList is the answer of GET /v1/inference-jobs.
type inferenceJobList struct {
	Models []struct {
		Model             string  `json:"model"`
		Waiting           int     `json:"waiting"`
		OldestWaitSeconds float64 `json:"oldest_wait_seconds"`
		Jobs              []struct {
			JobID    string     `json:"job_id"`
			State    string     `json:"state"`
			Requests int        `json:"requests"`
			FileID   string     `json:"file_id"`
			BatchID  string     `json:"batch_id"`
			ClosedAt time.Time  `json:"closed_at"`
			EndedAt  *time.Time `json:"ended_at"`
		} `json:"jobs"`
	} `json:"models"`
}

// inferenceJobs prints GET /v1/inference-jobs: the provider batch jobs of
// each model in batch mode (not batches of runs), a line each, after a
// line of the model's open batch (JOB "(open)": its requests waiting, the
// oldest's wait); with --json, the answer as it is.
func inferenceJobs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("inference-jobs", stderr)
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	if _, err := parse(fs, args, 0, "no arguments"); err != nil {
		return err
	}
	var raw json.RawMessage
	if err := newClient(*gw).json(ctx, "GET", "/v1/inference-jobs", nil, &raw); err != nil {
		return err
	}
	if *asJSON {
		return writeIndented(stdout, raw)
	}
	var list inferenceJobList
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("read the inference jobs: %w", err)
	}
	if len(list.Models) == 0 {
		_, err := fmt.Fprintln(stdout, "no model is in batch mode")
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tJOB\tSTATE\tREQUESTS\tFILE\tBATCH\tCLOSED\tENDED")
	stamp := func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, m := range list.Models {
		wait := "-"
		if m.Waiting > 0 {
			wait = "oldest " + (time.Duration(m.OldestWaitSeconds * float64(time.Second))).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t(open)\twaiting\t%d\t-\t-\t%s\t-\n", m.Model, m.Waiting, wait)
		for _, j := range m.Jobs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", m.Model, j.JobID, j.State, j.Requests, dash(j.FileID), dash(j.BatchID), stamp(&j.ClosedAt), stamp(j.EndedAt))
		}
	}
	return tw.Flush()
}
