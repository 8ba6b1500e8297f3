package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"sync"

	"github.com/stepwise-run/stepwise/internal/tooling/bench"
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
	noBroker := fs.Bool("no-broker", false, "connect the workers by an in-process channel instead of Kafka, to measure what the broker costs (not with --kafka or worker processes)")
	redis := fs.String("redis", "", "Redis `URL` to use instead of an embedded Redis (miniredis, which reports no server-side counts)")
	toolWorkers := fs.Int("tool-workers", 0, "run the tool calls in `N` separate tool worker processes (this program's toolworker command) instead of in this one")
	stepWorkers := fs.Int("step-workers", 0, "run the steps in `N` separate step worker processes (this program's stepworker command) instead of in this one")
	primaries := fs.Int("redis-primaries", 0, "run on a private Redis Cluster of `S` primaries (redis-server and redis-cli installed) instead of one redis-server")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole command to this `file` (go tool pprof reads it)")
	allocProfile := fs.String("allocprofile", "", "write the allocations of the whole command to this `file` (go tool pprof -sample_index=alloc_space)")
	tracePath := fs.String("trace", "", "write a runtime trace of the first scenario's measured part to this `file` (go tool trace reads it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var traceOut io.Writer
	if *tracePath != "" {
		f, err := os.Create(*tracePath)
		if err != nil {
			return err
		}
		defer f.Close()
		traceOut = f
	}
	stopProfile := func() {}
	if *cpuProfile != "" {
		stop, err := profileCPU(*cpuProfile)
		if err != nil {
			return err
		}
		stopProfile = sync.OnceFunc(stop)
		defer stopProfile()
	}
	rep, err := bench.Run(ctx, bench.Options{Scenarios: strings.Split(*scenarios, ","), Runs: *runs, Kafka: *kafka, NoBroker: *noBroker, Redis: *redis, Progress: os.Stderr, PlotDir: *plotDir,
		ToolWorkers: *toolWorkers, StepWorkers: *stepWorkers, RedisPrimaries: *primaries, Trace: traceOut})
	if err != nil {
		return err
	}
	if err := rep.WriteText(os.Stdout); err != nil {
		return err
	}
	if *cpuProfile != "" {
		stopProfile()
		if err := writeParts(os.Stdout, *cpuProfile, "cpu", "CPU"); err != nil {
			return err
		}
	}
	if *allocProfile != "" {
		writeAllocs(*allocProfile)
		if err := writeParts(os.Stdout, *allocProfile, "alloc_space", "bytes allocated"); err != nil {
			return err
		}
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

// profileCPU starts a CPU profile into path; the function it returns stops
// it and closes the file.
func profileCPU(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeParts writes the share of the profile at path each component took
// (bench.Parts) of its sampleType, which is what.
func writeParts(w io.Writer, path, sampleType, what string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	parts, err := bench.Parts(f, sampleType)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s of this process by component (the whole command, warm-ups included):\n", what)
	for _, p := range parts {
		fmt.Fprintf(w, "  %5.1f %%  %s\n", 100*p.Share, p.Name)
	}
	return nil
}

// writeAllocs writes the allocations made since the process started into
// path; a failure is reported on stderr, the report stands without it.
func writeAllocs(path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stepwise bench: alloc profile:", err)
	}
}
