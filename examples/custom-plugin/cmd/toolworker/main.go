// Command toolworker is stepwise's tool worker built with the same plugins
// as ./cmd/stepworker. The tool worker runs the BeforeToolExecute and
// AfterToolExecute hooks (result_guard's among them) and builds every
// agent's plugins when it starts, so it must know every plugin the
// configuration enables, even one like audit that has no hook here.
//
//	go build -o toolworker ./examples/custom-plugin/cmd/toolworker
//	toolworker --config examples/custom-plugin/stepwise.yaml --queues default
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	customplugin "github.com/stepwise-run/stepwise/examples/custom-plugin"
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
	o.Plugins = customplugin.Registry()
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
