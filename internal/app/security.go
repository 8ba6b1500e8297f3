package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/stepwise-run/stepwise/internal/kafka"
)

// Environment variables of the secure links, read when the matching flag is
// not given. Passwords come only from the environment: a flag shows in ps.
const (
	EnvKafkaTLS      = "STEPWISE_KAFKA_TLS"      // "true": TLS, verifying the brokers against the system's roots
	EnvKafkaCA       = "STEPWISE_KAFKA_CA"       // PEM file of the CAs that sign the brokers' certificates; implies TLS
	EnvKafkaCert     = "STEPWISE_KAFKA_CERT"     // PEM client certificate, for brokers that ask for one (with EnvKafkaKey)
	EnvKafkaKey      = "STEPWISE_KAFKA_KEY"      // its PEM private key
	EnvKafkaSASL     = "STEPWISE_KAFKA_SASL"     // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
	EnvKafkaUser     = "STEPWISE_KAFKA_USER"     // the SASL user
	EnvKafkaPassword = "STEPWISE_KAFKA_PASSWORD" // the SASL password
	EnvRedisCA       = "STEPWISE_REDIS_CA"       // PEM file of the CAs that sign Redis's certificate (rediss:// URLs)
	EnvRedisCert     = "STEPWISE_REDIS_CERT"     // PEM client certificate, for a Redis with tls-auth-clients (with EnvRedisKey)
	EnvRedisKey      = "STEPWISE_REDIS_KEY"      // its PEM private key
	EnvRedisUser     = "STEPWISE_REDIS_USER"     // the ACL user, instead of the URL's
	EnvRedisPassword = "STEPWISE_REDIS_PASSWORD" // its password, instead of the URL's
)

// KafkaSecurity is how the programs reach brokers that want TLS or SASL.
type KafkaSecurity struct {
	TLS      bool
	CA       string // file
	Cert     string // file
	Key      string // file
	SASL     string // mechanism
	User     string
	Password string // from the environment only, unless set in code
}

func (k *KafkaSecurity) register(fs *flag.FlagSet) {
	fs.BoolVar(&k.TLS, "kafka-tls", false, "speak TLS to the brokers (default $"+EnvKafkaTLS+"; implied by --kafka-ca)")
	fs.StringVar(&k.CA, "kafka-ca", "", "PEM `file` of the CAs of the brokers' certificates (default $"+EnvKafkaCA+")")
	fs.StringVar(&k.Cert, "kafka-cert", "", "PEM client certificate `file` for the brokers (default $"+EnvKafkaCert+")")
	fs.StringVar(&k.Key, "kafka-key", "", "PEM private key `file` of --kafka-cert (default $"+EnvKafkaKey+")")
	fs.StringVar(&k.SASL, "kafka-sasl", "", "SASL `mechanism`: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default $"+EnvKafkaSASL+"; password in $"+EnvKafkaPassword+")")
	fs.StringVar(&k.User, "kafka-user", "", "SASL `user` (default $"+EnvKafkaUser+")")
}

// cluster returns brokers with k's TLS and SASL, each unset field taken
// from its environment variable.
func (k KafkaSecurity) cluster(brokers []string) (kafka.Cluster, error) {
	k.CA = orEnv(k.CA, EnvKafkaCA)
	k.Cert = orEnv(k.Cert, EnvKafkaCert)
	k.Key = orEnv(k.Key, EnvKafkaKey)
	k.SASL = orEnv(k.SASL, EnvKafkaSASL)
	k.User = orEnv(k.User, EnvKafkaUser)
	k.Password = orEnv(k.Password, EnvKafkaPassword)
	if !k.TLS {
		if v := os.Getenv(EnvKafkaTLS); v != "" {
			on, err := strconv.ParseBool(v)
			if err != nil {
				return kafka.Cluster{}, fmt.Errorf("%s=%q: want true or false", EnvKafkaTLS, v)
			}
			k.TLS = on
		}
	}
	c := kafka.Cluster{Brokers: brokers, SASL: kafka.SASL{Mechanism: k.SASL, User: k.User, Password: k.Password}}
	if k.SASL == "" && (k.User != "" || k.Password != "") {
		return kafka.Cluster{}, fmt.Errorf("a Kafka user or password is set but no SASL mechanism: set --kafka-sasl or %s", EnvKafkaSASL)
	}
	if k.SASL == "" {
		c.SASL = kafka.SASL{}
	}
	if err := c.Validate(); err != nil {
		return kafka.Cluster{}, fmt.Errorf("%w (password from %s)", err, EnvKafkaPassword)
	}
	if k.TLS || k.CA != "" || k.Cert != "" {
		cfg, err := tlsConfig("kafka", k.CA, k.Cert, k.Key)
		if err != nil {
			return kafka.Cluster{}, err
		}
		c.TLS = cfg
	}
	return c, nil
}

// RedisSecurity is what a rediss:// or ACL-protected Redis needs beyond
// its URL.
type RedisSecurity struct {
	CA       string // file
	Cert     string // file
	Key      string // file
	User     string
	Password string // from the environment only, unless set in code
}

func (r *RedisSecurity) register(fs *flag.FlagSet) {
	fs.StringVar(&r.CA, "redis-ca", "", "PEM `file` of the CAs of Redis's certificate, for rediss:// URLs (default $"+EnvRedisCA+")")
	fs.StringVar(&r.Cert, "redis-cert", "", "PEM client certificate `file` for Redis (default $"+EnvRedisCert+")")
	fs.StringVar(&r.Key, "redis-key", "", "PEM private key `file` of --redis-cert (default $"+EnvRedisKey+")")
	fs.StringVar(&r.User, "redis-user", "", "Redis ACL `user`, instead of the URL's (default $"+EnvRedisUser+"; password in $"+EnvRedisPassword+")")
}

// apply puts r, each unset field taken from its environment variable, into
// the options of a go-redis client: its TLS configuration (set when the
// URL is rediss://) and its login.
func (r RedisSecurity) apply(tlsCfg **tls.Config, user, password *string) error {
	r.CA = orEnv(r.CA, EnvRedisCA)
	r.Cert = orEnv(r.Cert, EnvRedisCert)
	r.Key = orEnv(r.Key, EnvRedisKey)
	r.User = orEnv(r.User, EnvRedisUser)
	r.Password = orEnv(r.Password, EnvRedisPassword)
	if r.User != "" {
		*user = r.User
	}
	if r.Password != "" {
		*password = r.Password
	}
	if r.CA == "" && r.Cert == "" && r.Key == "" {
		return nil
	}
	if *tlsCfg == nil {
		return errors.New("a Redis CA or client certificate is given but the URL is redis://: use rediss:// for TLS")
	}
	cfg, err := tlsConfig("redis", r.CA, r.Cert, r.Key)
	if err != nil {
		return err
	}
	cfg.ServerName = (*tlsCfg).ServerName
	*tlsCfg = cfg
	return nil
}

// tlsConfig builds a client TLS configuration: the system's roots or the
// CAs in caFile, and a client certificate when certFile and keyFile are
// given.
func tlsConfig(what, caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%s CA: %w", what, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s CA %s: no PEM certificate in it", what, caFile)
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("%s client certificate: give both the certificate and its key, or neither", what)
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("%s client certificate: %w", what, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func orEnv(v, env string) string {
	if v != "" {
		return v
	}
	return os.Getenv(env)
}
