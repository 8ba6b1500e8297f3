package main

import (
	"context"
	"errors"
	"flag"
	"os"

	"github.com/stepwise-run/stepwise/internal/demo"
)

func demoCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	runs := fs.Int("runs", 90, "how many runs the batch has")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rep, err := demo.Run(ctx, demo.Options{Runs: *runs, Out: os.Stdout})
	if err != nil {
		return err
	}
	if !rep.OK() {
		return errors.New("some runs did not end as their scripts say (see above)")
	}
	return nil
}
