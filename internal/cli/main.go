package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitFail  = 1 // the gateway refused or failed, or the work did
	ExitUsage = 2 // a bad command, flag or argument
)

// Usage lists the client commands.
const Usage = `client commands (they talk to a gateway: --gateway URL, default $STEPWISE_GATEWAY
or http://127.0.0.1:8080; $STEPWISE_API_KEY is sent as the bearer key):
  submit FILE.jsonl [--follow] [--out FILE]   create the runs of a JSON Lines file, one run per line
  runs list [--status S] [--agent A] [--batch ID] [--termination R] [--tenant T] [--since T] [--until T]
            [--meta KEY=VALUE ...] [--limit N] [--cursor C]
                                               search runs, newest first: meta keys of runs.searchable_metadata
  runs get RUN                                 the run, its tool calls and state, as JSON
  runs watch RUN                               its events as they happen, until it ends
  runs cancel RUN [--reason R]
  runs export [--batch ID] [--status S] [--agent A] [--termination R] [--since T] [--until T] [--out FILE|-]
                                               the selected runs' archive records (run, messages, events), JSON Lines (admin)
  pending [--agent A] [--tool T] [--run RUN]   calls waiting for a decision
  decide RUN CALL --resume|--cancel [--payload JSON] [--args-hash H] [--reason R]
  rerun --batch ID [--termination error] [--status S] [--agent A] [--since T] [--until T] [--runs IDS]
                                               re-run the runs the filter selects, each once, as new linked runs
  schedules list | get S | pause S | resume S | trigger S | delete S
  schedules create (--cron EXPR [--timezone TZ] | --every D) [--id S] [--overlap skip|buffer_one|allow_all]
                   [--catchup-window D] (--agent A --input TEXT | --run JSON)
  agents                                       the agents, their current versions and the runs on each version
  agents upgrade NAME                          move NAME's waiting runs to its current version
  inference-jobs [--json]                      the provider batch jobs of each model in batch mode, and the
                                               requests waiting for the next (batch inference; not batches of runs) (admin)
`

// errUsage marks a usage error: exit code 2.
var errUsage = errors.New("usage")

// Commands are the names Main serves.
var Commands = []string{"submit", "runs", "pending", "decide", "rerun", "schedules", "agents", "inference-jobs"}

// Main runs one client command (args begin with its name) and returns the
// exit code. Results go to stdout, progress and errors to stderr.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, Usage)
		return ExitUsage
	}
	run := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"submit": submit, "runs": runs, "pending": pending, "decide": decide, "rerun": rerun, "schedules": schedules, "agents": agents,
		"inference-jobs": inferenceJobs,
	}[args[0]]
	if run == nil {
		fmt.Fprintf(stderr, "stepwise: unknown command %q\n\n%s", args[0], Usage)
		return ExitUsage
	}
	err := run(ctx, args[1:], stdout, stderr)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		if !errors.Is(err, flag.ErrHelp) && err != errUsage {
			fmt.Fprintf(stderr, "stepwise %s: %v\n", args[0], err)
		}
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "stepwise %s: %v\n", args[0], err)
		return ExitFail
	}
}

// flags returns a flag set for a command that also takes --gateway.
func flags(name string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	gw := fs.String("gateway", "", "the gateway's `URL` (default $"+EnvGateway+" or "+DefaultGateway+")")
	return fs, gw
}

// parse parses args into fs, allowing flags after the positional
// arguments, and checks the count of positional arguments.
func parse(fs *flag.FlagSet, args []string, positional int, what string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != positional {
		return nil, fmt.Errorf("%w: want %s", errUsage, what)
	}
	return pos, nil
}
