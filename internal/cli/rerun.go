package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// rerun serves `stepwise rerun`: POST /v1/runs/rerun with the filter its
// flags give, at least one of them.
func rerun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("rerun", stderr)
	filter := filterFlags(fs)
	runIDs := fs.String("runs", "", "only these runs: `IDs` separated by commas")
	requestID := fs.String("request-id", "", "names this re-run: the same filter and `id` again re-run nothing more")
	if _, err := parse(fs, args, 0, "no arguments"); err != nil {
		return err
	}
	f := map[string]any{}
	for k, v := range filter.set() {
		f[k] = v
	}
	if *runIDs != "" {
		f["run_ids"] = strings.Split(*runIDs, ",")
	}
	if len(f) == 0 {
		return fmt.Errorf("%w: give a filter: --batch, --termination, --status, --agent, --since, --until or --runs", errUsage)
	}
	body := map[string]any{"filter": f}
	if *requestID != "" {
		body["request_id"] = *requestID
	}
	var out struct {
		BatchID   string `json:"batch_id"`
		Requested int    `json:"requested"`
	}
	if err := newClient(*gw).json(ctx, "POST", "/v1/runs/rerun", body, &out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d runs requested again in batch %s; follow them with GET /v1/batches/%s\n", out.Requested, out.BatchID, out.BatchID)
	return nil
}
