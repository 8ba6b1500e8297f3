package main

import (
	"context"
	"flag"
	"fmt"
	"net"

	"github.com/stepwise-run/stepwise/internal/app"
)

func dev(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	configPath := fs.String("config", "", "configuration `file` (YAML); empty: the built-in default")
	httpAddr := fs.String("http", "127.0.0.1:8080", "HTTP listen `address`")
	kafkaAddr := fs.String("kafka", app.DefaultDevKafka, "`address` the embedded Kafka-protocol broker listens on")
	redisURL := fs.String("redis", "", "Redis `URL` to use instead of the embedded one")
	dataDir := fs.String("data", "", "`directory` where the broker keeps topics and offsets across restarts (default: nothing kept)")
	insecure := fs.Bool("insecure", false, "serve HTTP beyond loopback even with no API key configured (auth.keys)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	in, err := app.StartInfra(*kafkaAddr, *redisURL, *dataDir)
	if err != nil {
		return err
	}
	defer in.Close()
	return app.Traced(ctx, "stepwise-dev", func() error { return runDev(ctx, in, *configPath, *httpAddr, *insecure) })
}

// runDev runs the whole stack on in until ctx ends.
func runDev(ctx context.Context, in *app.Infra, configPath, httpAddr string, insecure bool) error {
	o := in.Options(configPath)
	o.Logger = app.NewLogger("stepwise-dev")
	stack, err := app.Connect(ctx, o)
	if err != nil {
		return err
	}
	defer stack.Close()
	stack.Insecure = insecure
	l, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", httpAddr, err)
	}
	if err := stack.CheckExposure(l.Addr()); err != nil {
		return err
	}
	fmt.Printf("stepwise dev: http=http://%s kafka=%s redis=%s\n", l.Addr(), in.Kafka.Addrs()[0], in.RedisURL)
	return stack.RunAll(ctx, l)
}

func infra(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("infra", flag.ContinueOnError)
	kafkaAddr := fs.String("kafka", app.DefaultDevKafka, "`address` the embedded Kafka-protocol broker listens on")
	redisAddr := fs.String("redis", "127.0.0.1:6380", "`address` the embedded Redis listens on")
	dataDir := fs.String("data", "", "`directory` where the broker keeps topics and offsets across restarts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	in, err := app.StartInfraOn(*kafkaAddr, *redisAddr, *dataDir)
	if err != nil {
		return err
	}
	defer in.Close()
	fmt.Printf("stepwise infra: kafka=%s redis=%s\n", in.Kafka.Addrs()[0], in.RedisURL)
	fmt.Printf("  export %s=%s %s=%s\n", app.EnvKafkaBrokers, in.Kafka.Addrs()[0], app.EnvRedisURL, in.RedisURL)
	<-ctx.Done()
	return nil
}
