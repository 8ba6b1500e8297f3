// Command stepwise is the command line of stepwise:
//
//	stepwise dev   [--config FILE] [--http ADDR] [--kafka ADDR] [--redis URL] [--data DIR] [--insecure]   everything in one process
//	stepwise infra [--kafka ADDR] [--redis ADDR] [--data DIR]                               only the embedded broker and Redis
//	stepwise stepworker|toolworker [flags]                                                  one worker, as cmd/stepworker and cmd/toolworker
//	stepwise demo  [--runs N]                                                               a sample batch on an embedded stack
//	stepwise dlq list|redrive [--topic T] [--since D] [--dry-run] [--json]                  the dead-letter topic: show, re-publish
//	stepwise bench [--scenario S,...] [--runs N] [--json FILE] [--kafka B | --no-broker] [--redis URL | --redis-primaries S] [--step-workers N] [--tool-workers N]   measured workloads
//	stepwise submit|runs|pending|decide ...                                                 a client of a gateway (internal/cli)
//
// dev's --redis is the URL of a Redis to use instead of the embedded one;
// infra's --redis is the address its embedded Redis listens on. --data keeps
// the embedded broker's topics and offsets in DIR across restarts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/cli"
)

const usage = `usage: stepwise <command> [flags]

commands:
  dev     run the gateway, both workers, an embedded Kafka-protocol broker and
          an embedded Redis (unless --redis) in one process
  infra   run only the embedded broker and Redis, for multi-process setups
  stepworker, toolworker
          run one worker program, the same as the stepworker and toolworker
          commands (one binary for every part of a multi-process setup)
  demo    run a sample batch of agent runs on an embedded stack and summarize it
  dlq     list the dead-letter topic, or re-drive its records to their topics
  bench   run fixed workloads through a whole stack and report what a step costs

Run 'stepwise <command> -h' for the flags of a command.

` + cli.Usage

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	commands := map[string]func(context.Context, []string) error{
		"dev":   dev,
		"infra": infra,
		"demo":  demoCmd,
		"dlq":   dlq,
		"bench": benchCmd,
		"stepworker": func(ctx context.Context, args []string) error {
			return app.StepWorker(nil).Exec(ctx, args)
		},
		"toolworker": func(ctx context.Context, args []string) error {
			return app.ToolWorker(nil).Exec(ctx, args)
		},
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if slices.Contains(cli.Commands, os.Args[1]) {
		code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "stepwise: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err := cmd(ctx, os.Args[2:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "stepwise %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
