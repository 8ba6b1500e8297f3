// Command gateway serves the HTTP API: it creates runs, reads them from
// Redis and streams their events.
//
//	gateway --config stepwise.yaml --http :8080
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/stepwise-run/stepwise/internal/app"
)

func main() {
	var o app.Options
	o.Register(flag.CommandLine)
	addr := flag.String("http", ":8080", "HTTP listen `address`")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o app.Options, addr string) error {
	o.Logger = app.NewLogger("gateway")
	stack, err := app.Connect(ctx, o)
	if err != nil {
		return err
	}
	defer stack.Close()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	o.Logger.Info("gateway listening", "addr", l.Addr().String())
	return stack.RunGateway(ctx, l)
}
