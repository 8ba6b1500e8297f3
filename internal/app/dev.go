package app

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/stepwise-run/stepwise/internal/embedded"
)

// DefaultDevKafka is where `stepwise dev` and `stepwise infra` listen for
// Kafka clients unless told otherwise.
const DefaultDevKafka = "127.0.0.1:9092"

// Infra is the embedded infrastructure of `stepwise dev` and `stepwise
// infra`: a Kafka-protocol broker and, unless a Redis URL was given, an
// in-process Redis.
type Infra struct {
	Kafka    *embedded.Kafka
	Redis    *embedded.Redis // nil when an outside Redis is used
	RedisURL string
}

// StartInfra starts the embedded broker on kafkaAddr and an embedded Redis
// on a random port unless redisURL names one. dataDir, when set, keeps the
// broker's topics and offsets across restarts.
func StartInfra(kafkaAddr, redisURL, dataDir string) (*Infra, error) {
	return startInfra(kafkaAddr, redisURL, "127.0.0.1:0", dataDir)
}

// StartInfraOn starts the embedded broker on kafkaAddr and the embedded Redis
// on redisAddr.
func StartInfraOn(kafkaAddr, redisAddr, dataDir string) (*Infra, error) {
	return startInfra(kafkaAddr, "", redisAddr, dataDir)
}

func startInfra(kafkaAddr, redisURL, redisAddr, dataDir string) (*Infra, error) {
	if kafkaAddr == "" {
		kafkaAddr = DefaultDevKafka
	}
	var opts []embedded.KafkaOption
	if dataDir != "" {
		opts = append(opts, embedded.WithDataDir(dataDir))
	}
	k, err := embedded.StartKafka(kafkaAddr, opts...)
	if err != nil {
		return nil, fmt.Errorf("start the embedded Kafka broker on %s: %w", kafkaAddr, err)
	}
	in := &Infra{Kafka: k, RedisURL: redisURL}
	if redisURL == "" {
		r, err := embedded.StartRedis(redisAddr)
		if err != nil {
			k.Close()
			return nil, fmt.Errorf("start the embedded Redis: %w", err)
		}
		in.Redis, in.RedisURL = r, r.URL()
	}
	return in, nil
}

// Options returns program options pointing at this infrastructure.
func (in *Infra) Options(configPath string) Options {
	return Options{ConfigPath: configPath, Kafka: in.Kafka.Addrs()[0], Redis: in.RedisURL}
}

// Close stops what StartInfra started.
func (in *Infra) Close() {
	in.Kafka.Close()
	if in.Redis != nil {
		in.Redis.Close()
	}
}

// RunAll runs the step worker, the tool worker (every queue) and the gateway
// on l in one process until ctx ends or one of them fails.
func (s *Stack) RunAll(ctx context.Context, l net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 3)
	run := func(f func(context.Context) error) {
		go func() {
			err := f(ctx)
			cancel() // one part down takes the others down
			errc <- err
		}()
	}
	run(s.RunStepWorker)
	run(func(ctx context.Context) error { return s.RunToolWorker(ctx, nil) })
	run(func(ctx context.Context) error { return s.RunGateway(ctx, l) })
	var errs []error
	for i := 0; i < 3; i++ {
		if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
