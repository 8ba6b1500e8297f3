package app

import (
	"errors"
	"flag"
	"log/slog"
	"os"
	"strings"

	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

// Environment variables that name the infrastructure when flags do not.
const (
	EnvKafkaBrokers = "STEPWISE_KAFKA_BROKERS"
	EnvRedisURL     = "STEPWISE_REDIS_URL"
)

// Options are the settings every program takes: the configuration file and
// the addresses of Kafka and Redis, with how to reach them securely.
type Options struct {
	ConfigPath string           // "" = the built-in default configuration
	Config     *config.Config   // when set, used instead of ConfigPath (tests, embedding)
	Plugins    *plugin.Registry // the plugins agents may enable; nil: stepwise's built-ins
	Kafka      string           // comma-separated brokers; "" = $STEPWISE_KAFKA_BROKERS
	Redis      string           // redis:// or rediss:// URL; "" = $STEPWISE_REDIS_URL
	Logger     *slog.Logger     // default slog.Default()
	// KafkaSecurity and RedisSecurity are TLS and logins (security.go);
	// each empty field falls back to its environment variable.
	KafkaSecurity KafkaSecurity
	RedisSecurity RedisSecurity
	// MetricsAddr, when set, is where the program serves its Prometheus
	// metrics at /metrics (--metrics).
	MetricsAddr string
}

// Register adds --config, --kafka and --redis to fs, and the flags of
// KafkaSecurity and RedisSecurity.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.ConfigPath, "config", "", "configuration `file` (YAML); empty: the built-in default")
	fs.StringVar(&o.Kafka, "kafka", "", "Kafka `brokers`, comma-separated (default $"+EnvKafkaBrokers+")")
	fs.StringVar(&o.Redis, "redis", "", "Redis `URL`: redis://[user:password@]host:port/db, rediss:// for TLS, or a cluster's (default $"+EnvRedisURL+")")
	o.KafkaSecurity.register(fs)
	o.RedisSecurity.register(fs)
	fs.StringVar(&o.MetricsAddr, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics (the gateway also serves them on its own address)")
}

// cluster returns the Kafka brokers from the flag or the environment, with
// their TLS and SASL settings.
func (o Options) cluster() (kafka.Cluster, error) {
	raw := o.Kafka
	if raw == "" {
		raw = os.Getenv(EnvKafkaBrokers)
	}
	var out []string
	for _, b := range strings.Split(raw, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return kafka.Cluster{}, errors.New("no Kafka brokers: pass --kafka host:port or set " + EnvKafkaBrokers)
	}
	return o.KafkaSecurity.cluster(out)
}

// redisURL returns the Redis URL from the flag or the environment.
func (o Options) redisURL() (string, error) {
	url := o.Redis
	if url == "" {
		url = os.Getenv(EnvRedisURL)
	}
	if url == "" {
		return "", errors.New("no Redis: pass --redis redis://host:port/0 or set " + EnvRedisURL)
	}
	return url, nil
}

// config returns Config, or the file ConfigPath names, or the default.
func (o Options) config() (*config.Config, error) {
	switch {
	case o.Config != nil:
		return o.Config, nil
	case o.ConfigPath == "":
		return config.Default(), nil
	default:
		return config.Load(o.ConfigPath)
	}
}

// plugins returns the registry of plugins agents may enable.
func (o Options) plugins() *plugin.Registry {
	if o.Plugins != nil {
		return o.Plugins
	}
	return builtin.Registry()
}
