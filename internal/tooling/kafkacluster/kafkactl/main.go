// Command kafkactl is scripts/kafka: it runs an Apache Kafka cluster on this
// machine (package kafkacluster) in the directory $STEPWISE_KAFKA_DIR
// (default stepwise-kafka under the temporary directory).
//
//	kafkactl up [--brokers N]   start N nodes (default 3); prints KAFKA_BROKERS=h:p,...
//	kafkactl kill I             kill node I (1-based) with SIGKILL
//	kafkactl stop I             stop node I cleanly (SIGTERM)
//	kafkactl start I            start node I again, on its data
//	kafkactl brokers            print KAFKA_BROKERS=... of the running cluster
//	kafkactl down               stop every node and remove the directory
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"

	"github.com/stepwise-run/stepwise/internal/tooling/kafkacluster"
)

const usage = `usage: scripts/kafka up [--brokers N] | kill I | stop I | start I | brokers | down
  An Apache Kafka ` + kafkacluster.Version + ` cluster of KRaft nodes on loopback, fetched from
  Maven Central once per machine (into $` + kafkacluster.EnvCache + `, default ~/.cache/stepwise/kafka).
  Its state is in $` + kafkacluster.EnvDir + ` (default $TMPDIR/stepwise-kafka).
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "scripts/kafka:", err)
		if errors.Is(err, errUsage) {
			fmt.Fprint(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errUsage
	}
	dir := os.Getenv(kafkacluster.EnvDir)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "stepwise-kafka")
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "up":
		fs := flag.NewFlagSet("up", flag.ContinueOnError)
		n := fs.Int("brokers", 3, "the number of broker+controller nodes")
		if err := fs.Parse(rest); err != nil || fs.NArg() > 0 || *n < 1 {
			return errUsage
		}
		c, err := kafkacluster.Up(ctx, kafkacluster.Options{Dir: dir, Nodes: *n, Log: os.Stderr})
		if err != nil {
			return err
		}
		fmt.Println("KAFKA_BROKERS=" + c.Brokers())
		return nil
	case "kill", "stop", "start":
		if len(rest) != 1 {
			return errUsage
		}
		id, err := strconv.Atoi(rest[0])
		if err != nil {
			return errUsage
		}
		c, err := kafkacluster.Load(dir)
		if err != nil {
			return err
		}
		c.SetLog(os.Stderr)
		switch cmd {
		case "kill":
			return c.Kill(id)
		case "stop":
			return c.Stop(id)
		default:
			return c.Start(ctx, id)
		}
	case "brokers":
		c, err := kafkacluster.Load(dir)
		if err != nil {
			return err
		}
		fmt.Println("KAFKA_BROKERS=" + c.Brokers())
		return nil
	case "down":
		c, err := kafkacluster.Load(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil // nothing runs
		}
		if err != nil {
			return err
		}
		c.SetLog(os.Stderr)
		return c.Down()
	default:
		return errUsage
	}
}
