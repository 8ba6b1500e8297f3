package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// submitChunk is how many runs one batch request carries.
const submitChunk = 500

// submit creates the runs of a JSON Lines file through POST
// /v1/runs/batch, a chunk at a time (with --inference, in that inference
// mode unless a line names its own), and with --follow waits for each to
// end and writes its final view as one JSON line (to --out, or stdout).
func submit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("submit", stderr)
	follow := fs.Bool("follow", false, "wait for the runs to end and write each as a JSON line")
	outPath := fs.String("out", "", "with --follow, write the results to this `file` instead of stdout")
	inference := fs.String("inference", "", "the inference `mode` (batch or live) of the runs whose line names none; default: their model's")
	pos, err := parse(fs, args, 1, "FILE.jsonl")
	if err != nil {
		return err
	}
	lines, err := readLines(pos[0])
	if err != nil {
		return err
	}
	path := "/v1/runs/batch"
	if *inference != "" {
		path += "?inference=" + url.QueryEscape(*inference)
	}
	c := newClient(*gw)
	var ids []string
	for start := 0; start < len(lines); start += submitChunk {
		chunk := lines[start:min(start+submitChunk, len(lines))]
		var out struct {
			RunIDs []string `json:"run_ids"`
		}
		body := bytes.Join(chunk, []byte("\n"))
		if err := c.request(ctx, "POST", path, "application/x-ndjson", body, &out); err != nil {
			return fmt.Errorf("lines %d-%d: %w (%d runs before them were created)", start+1, start+len(chunk), err, len(ids))
		}
		ids = append(ids, out.RunIDs...)
		fmt.Fprintf(stderr, "\rsubmitted %s", bar(len(ids), len(lines)))
	}
	fmt.Fprintln(stderr)
	if !*follow {
		for _, id := range ids {
			fmt.Fprintln(stdout, id)
		}
		return nil
	}
	out := stdout
	if *outPath != "" {
		f, err := os.Create(*outPath)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	return followRuns(ctx, c, ids, out, stderr)
}

// readLines returns the non-blank lines of a JSON Lines file, each checked
// to be a JSON object.
func readLines(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) || line[0] != '{' {
			return nil, fmt.Errorf("%w: %s:%d is not a JSON object", errUsage, path, n)
		}
		lines = append(lines, bytes.Clone(line))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%w: %s holds no run", errUsage, path)
	}
	return lines, nil
}

// followRuns polls the runs until every one is done, writes each final
// view as a JSON line as it ends, and shows the count on stderr.
func followRuns(ctx context.Context, c *client, ids []string, out, stderr io.Writer) error {
	left := map[string]bool{}
	for _, id := range ids {
		left[id] = true
	}
	ended := map[string]int{}
	var mu sync.Mutex
	for len(left) > 0 {
		todo := slices.Sorted(maps.Keys(left))
		work := make(chan string)
		var wg sync.WaitGroup
		var firstErr error
		for range min(16, len(todo)) {
			wg.Go(func() {
				for id := range work {
					var v json.RawMessage
					err := c.json(ctx, "GET", "/v1/runs/"+url.PathEscape(id), nil, &v)
					var s struct {
						Status      string `json:"status"`
						Termination struct {
							Reason string `json:"reason"`
						} `json:"termination"`
					}
					_ = json.Unmarshal(v, &s)
					mu.Lock()
					switch {
					case err != nil && firstErr == nil:
						firstErr = err
					case err == nil && s.Status == "done":
						delete(left, id)
						ended[s.Termination.Reason]++
						_, werr := fmt.Fprintf(out, "%s\n", compact(v))
						if werr != nil && firstErr == nil {
							firstErr = werr
						}
					}
					mu.Unlock()
				}
			})
		}
		for _, id := range todo {
			work <- id
		}
		close(work)
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		fmt.Fprintf(stderr, "\rdone      %s", bar(len(ids)-len(left), len(ids)))
		if len(left) > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	fmt.Fprintf(stderr, "\nended: %v\n", ended)
	return nil
}

// bar draws done of total as a progress bar: [#######.............] 7/20.
func bar(done, total int) string {
	const width = 30
	n := width * done / max(total, 1)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + fmt.Sprintf("] %d/%d", done, total)
}

func compact(v json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}
