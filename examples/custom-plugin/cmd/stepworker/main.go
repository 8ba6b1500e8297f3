// Command stepworker is stepwise's step worker built with the audit plugin
// besides the built-ins: the same program as cmd/stepworker, one option
// more.
//
//	go build -o stepworker ./examples/custom-plugin/cmd/stepworker
//	stepworker --config examples/custom-plugin/stepwise.yaml --kafka localhost:9092 --redis redis://localhost:6379/0
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	customplugin "github.com/stepwise-run/stepwise/examples/custom-plugin"
	"github.com/stepwise-run/stepwise/internal/app"
)

func main() {
	var o app.Options
	o.Register(flag.CommandLine)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "stepworker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o app.Options) error {
	o.Logger = app.NewLogger("stepworker")
	o.Plugins = customplugin.Registry()
	stack, err := app.Connect(ctx, o)
	if err != nil {
		return err
	}
	defer stack.Close()
	return stack.RunStepWorker(ctx)
}
