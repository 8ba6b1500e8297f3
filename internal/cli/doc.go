// Package cli is stepwise's command-line client of a gateway: the
// commands `stepwise submit`, `runs list|get|watch|cancel`, `pending` and
// `decide`. Each takes --gateway (default $STEPWISE_GATEWAY, else
// http://127.0.0.1:8080) and sends $STEPWISE_API_KEY as its bearer key
// when set.
//
// Exit codes: 0 done; 1 the gateway refused or failed (its error is printed
// as one line: status, code, message) or a run followed did not end
// naturally; 2 a usage error (unknown command, bad flag or argument).
//
//	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
package cli
