// Command gateway serves the HTTP API: it creates runs, reads them from
// Redis, streams their events, and publishes decisions and cancels.
//
//	gateway --config stepwise.yaml --http :8080
package main

import (
	"context"
	"flag"
	"fmt"
	"net"

	"github.com/stepwise-run/stepwise/internal/app"
)

func main() {
	var addr string
	app.Main(app.Program{
		Name:  "gateway",
		Flags: func(fs *flag.FlagSet) { fs.StringVar(&addr, "http", ":8080", "HTTP listen `address`") },
		Run: func(ctx context.Context, s *app.Stack) error {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", addr, err)
			}
			s.Logger.Info("gateway listening", "addr", l.Addr().String())
			return s.RunGateway(ctx, l)
		},
	})
}
