package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/deadletter"
)

const dlqUsage = `usage: stepwise dlq list    [--topic T] [--since D] [--json] [connection flags]
       stepwise dlq redrive [--topic T] [--since D] [--dry-run] [--json] [connection flags]

list shows the records of the dead-letter topic: record, age, original
topic, key (the run id), whether it was re-driven, and the reason.
redrive publishes them back to the topics they came from, each once:
running it again re-publishes nothing. --topic takes a full topic name or
one without the prefix ("decisions", "tool-calls.payments"); --since a Go
duration ("2h"). Connection flags are those of every program (--config,
--kafka, --redis, TLS and SASL); see -h.
`

// dlq runs `stepwise dlq list|redrive`.
func dlq(ctx context.Context, args []string) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "redrive") {
		fmt.Fprint(os.Stderr, dlqUsage)
		return errors.New("want list or redrive")
	}
	sub := args[0]
	fs := flag.NewFlagSet("dlq "+sub, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), dlqUsage, "\nflags:\n"); fs.PrintDefaults() }
	var o app.Options
	o.Register(fs)
	var f deadletter.Filter
	fs.StringVar(&f.Topic, "topic", "", "only records consumed from this `topic`")
	fs.DurationVar(&f.Since, "since", 0, "only records dead-lettered within this `duration` (e.g. 2h)")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	dryRun := false
	if sub == "redrive" {
		fs.BoolVar(&dryRun, "dry-run", false, "say what would be re-driven; publish and record nothing")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.Logger = app.NewLogger("stepwise-dlq")
	stack, err := app.Connect(ctx, o)
	if err != nil {
		return err
	}
	defer stack.Close()
	q, err := deadletter.New(deadletter.Config{Kafka: stack.Kafka, Redis: stack.Redis, Publisher: stack.Publisher, Names: stack.Names})
	if err != nil {
		return err
	}
	if sub == "list" {
		recs, err := q.List(ctx, f)
		if err != nil {
			return err
		}
		if *asJSON {
			return deadletter.WriteJSON(os.Stdout, recs)
		}
		return deadletter.WriteTable(os.Stdout, recs, time.Now())
	}
	rep, err := q.Redrive(ctx, f, dryRun)
	if *asJSON {
		if werr := rep.WriteJSON(os.Stdout); werr != nil {
			return errors.Join(err, werr)
		}
	} else if werr := rep.WriteText(os.Stdout); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}
