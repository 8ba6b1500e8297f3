package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/tracing"
)

// Program describes one of stepwise's programs for Main.
type Program struct {
	Name    string                                    // e.g. "stepworker"; names the logger and prefixes errors
	Flags   func(fs *flag.FlagSet)                    // the program's own flags, besides --config, --kafka, --redis
	Plugins *plugin.Registry                          // nil: stepwise's built-in plugins
	Run     func(ctx context.Context, s *Stack) error // runs until ctx ends
}

// Main is the whole main of a program: it runs it (Exec) with the
// command line's arguments until SIGINT or SIGTERM; an error goes to
// stderr and exits 1 (2 for bad flags).
func Main(p Program) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := p.Exec(ctx, os.Args[1:])
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, new(flagError)):
		os.Exit(2) // the flag package has said what is wrong
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", p.Name, err)
		os.Exit(1)
	}
}

// Exec runs the program with args, its flags, until ctx ends: it reads
// them, connects (a missing or unreachable address is a clear error) and
// runs. `stepwise stepworker` and `stepwise toolworker` run their programs
// this way, as the separate commands do through Main.
func (p Program) Exec(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet(p.Name, flag.ContinueOnError)
	var o Options
	o.Register(fs)
	if p.Flags != nil {
		p.Flags(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return flagError{err}
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
		fmt.Fprintln(fs.Output(), err)
		fs.Usage()
		return flagError{err}
	}
	o.Logger, o.Plugins = NewLogger(p.Name), p.Plugins
	return Traced(ctx, p.Name, func() error { return run(ctx, o, p.Run) })
}

// flagError is a command line the flag package refused (and printed why).
type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }

// Traced runs f with the tracing the OTEL_* environment asks for (none by
// default, package tracing), flushing the spans when f returns.
func Traced(ctx context.Context, service string, f func() error) error {
	shutdown, err := tracing.Setup(ctx, service)
	if err != nil {
		return err
	}
	defer func() {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = shutdown(flush)
	}()
	return f()
}

func run(ctx context.Context, o Options, program func(context.Context, *Stack) error) error {
	stack, err := Connect(ctx, o)
	if err != nil {
		return err
	}
	defer stack.Close()
	if o.MetricsAddr != "" {
		stop, err := stack.serveMetrics(o.MetricsAddr)
		if err != nil {
			return err
		}
		defer stop()
	}
	return program(ctx, stack)
}

// StepWorker is the stepworker program, offering the plugins of reg (nil:
// stepwise's built-ins).
func StepWorker(reg *plugin.Registry) Program {
	return Program{Name: "stepworker", Plugins: reg, Run: func(ctx context.Context, s *Stack) error { return s.RunStepWorker(ctx) }}
}

// ToolWorker is the toolworker program, offering the plugins of reg (nil:
// stepwise's built-ins), with its --queues flag.
func ToolWorker(reg *plugin.Registry) Program {
	var queues string
	return Program{
		Name:    "toolworker",
		Plugins: reg,
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&queues, "queues", "", "tool `queues` to consume, comma-separated (default: toolworker.queues, else every queue in the configuration)")
		},
		Run: func(ctx context.Context, s *Stack) error { return s.RunToolWorker(ctx, splitList(queues)) },
	}
}

func splitList(s string) []string {
	var out []string
	for _, q := range strings.Split(s, ",") {
		if q = strings.TrimSpace(q); q != "" {
			out = append(out, q)
		}
	}
	return out
}
