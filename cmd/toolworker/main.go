// Command toolworker executes tool calls of the queues it is given (every
// queue of the configuration by default). Run as many as the load needs; they
// share the work of a queue through their consumer group.
//
//	toolworker --config stepwise.yaml --queues payments,default
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/stepwise-run/stepwise/internal/app"
)

func main() {
	var o app.Options
	o.Register(flag.CommandLine)
	queues := flag.String("queues", "", "tool `queues` to consume, comma-separated (default: every queue in the configuration)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, splitList(*queues)); err != nil {
		fmt.Fprintln(os.Stderr, "toolworker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o app.Options, queues []string) error {
	o.Logger = app.NewLogger("toolworker")
	stack, err := app.Connect(ctx, o)
	if err != nil {
		return err
	}
	defer stack.Close()
	return stack.RunToolWorker(ctx, queues)
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
