// Command gateway serves the HTTP API: it creates runs, reads them from
// Redis, streams their events, and publishes decisions and cancels.
//
//	gateway --config stepwise.yaml --http :8080
//
// It listens on 127.0.0.1:8080 unless told otherwise, and refuses to listen
// beyond loopback while the configuration has no API key (auth.keys),
// unless --insecure.
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
	var insecure bool
	app.Main(app.Program{
		Name: "gateway",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&addr, "http", "127.0.0.1:8080", "HTTP listen `address`")
			fs.BoolVar(&insecure, "insecure", false, "serve beyond loopback even with no API key configured (auth.keys)")
		},
		Run: func(ctx context.Context, s *app.Stack) error {
			s.Insecure = insecure
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", addr, err)
			}
			s.Logger.Info("gateway listening", "addr", l.Addr().String())
			return s.RunGateway(ctx, l)
		},
	})
}
