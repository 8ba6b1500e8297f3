// Command stepworker runs the Step and StepEnd handlers and the sweeper
// against a Kafka and a Redis given by flags or the environment.
//
//	stepworker --config stepwise.yaml --kafka localhost:9092 --redis redis://localhost:6379/0
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

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
	stack, err := app.Connect(ctx, o)
	if err != nil {
		return err
	}
	defer stack.Close()
	return stack.RunStepWorker(ctx)
}
