package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
)

// runsExport serves `stepwise runs export`: GET /v1/export/runs with the
// filter its flags give, the archive records written to --out (a file, or
// - for stdout) as they come. An export cut off midway is an error, and
// leaves no file behind.
func runsExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("runs export", stderr)
	filter := filterFlags(fs)
	outPath := fs.String("out", "-", "write the runs to this `file` (- for stdout)")
	if _, err := parse(fs, args, 0, "no arguments"); err != nil {
		return err
	}
	q := url.Values{}
	for k, v := range filter.set() {
		q.Set(k, v)
	}
	body, err := newClient(*gw).stream(ctx, "/v1/export/runs?"+q.Encode())
	if err != nil {
		return err
	}
	defer body.Close()
	if *outPath == "-" {
		_, err = io.Copy(stdout, body)
		return exportCut(err)
	}
	f, err := os.Create(*outPath)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, body)
	if err == nil {
		err = f.Close()
	} else {
		_ = f.Close()
	}
	if err != nil {
		_ = os.Remove(*outPath)
		return exportCut(err)
	}
	fmt.Fprintf(stderr, "exported %d bytes to %s\n", n, *outPath)
	return nil
}

// exportCut says that an export that failed midway is incomplete.
func exportCut(err error) error {
	if err == nil {
		return nil
	}
	return errors.Join(errors.New("the export was cut off: it is incomplete"), err)
}
