package main

import (
	"context"
	"flag"
	"os"
	"strings"

	"github.com/stepwise-run/stepwise/internal/bench"
)

// benchCmd runs `stepwise bench`: the scenarios of package bench on an
// embedded stack (or the given broker and Redis), a progress line per
// scenario on stderr, a summary on stdout and, with --json, the report.
func benchCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	scenarios := fs.String("scenario", "all", "`names`, comma-separated: "+names()+", or all")
	runs := fs.Int("runs", 0, "runs per scenario (default: each scenario's own)")
	jsonPath := fs.String("json", "", "write the report as JSON to this `file`")
	plotDir := fs.String("plot", "", "write PNG charts (throughput against concurrency, latency CDF) into this `directory`")
	kafka := fs.String("kafka", "", "Kafka `brokers` to use instead of an embedded broker")
	redis := fs.String("redis", "", "Redis `URL` to use instead of an embedded Redis (miniredis, which reports no server-side counts)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rep, err := bench.Run(ctx, bench.Options{Scenarios: strings.Split(*scenarios, ","), Runs: *runs, Kafka: *kafka, Redis: *redis, Progress: os.Stderr, PlotDir: *plotDir})
	if err != nil {
		return err
	}
	if err := rep.WriteText(os.Stdout); err != nil {
		return err
	}
	if *jsonPath == "" {
		return nil
	}
	f, err := os.Create(*jsonPath)
	if err != nil {
		return err
	}
	defer f.Close()
	return rep.WriteJSON(f)
}

func names() string {
	var out []string
	for _, s := range bench.Scenarios {
		out = append(out, s.Name)
	}
	return strings.Join(out, ", ")
}
