package app_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/embedded"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

// The whole pipeline over TLS + SCRAM-SHA-512 to the broker and TLS (with a
// client certificate) + an ACL user to Redis, configured the way an
// operator does: through the environment.
func TestSecure_the_pipeline_runs_over_TLS_and_SASL_to_kafka_and_TLS_and_ACL_to_redis(t *testing.T) {
	certs := testinfra.NewCerts(t)
	brokers := testinfra.KafkaSecure(t, certs, kafka.SASL{Mechanism: kafka.SASLScramSHA512, User: "stepwise", Password: "kafka-secret-1"})
	redisURL := testinfra.RedisTLS(t, certs, "stepwise", "redis-secret-1")
	for env, v := range map[string]string{
		app.EnvKafkaCA: certs.CA, app.EnvKafkaSASL: kafka.SASLScramSHA512, app.EnvKafkaUser: "stepwise", app.EnvKafkaPassword: "kafka-secret-1",
		app.EnvRedisCA: certs.CA, app.EnvRedisCert: certs.ClientCert, app.EnvRedisKey: certs.ClientKey,
		app.EnvRedisUser: "stepwise", app.EnvRedisPassword: "redis-secret-1",
	} {
		t.Setenv(env, v)
	}
	stack := connect(t, infra{brokers: brokers, redisURL: redisURL}, parseConfig(t, testConfig))
	if stack.Kafka.TLS == nil || stack.Kafka.SASL.Mechanism != kafka.SASLScramSHA512 {
		t.Fatalf("the stack's Kafka link: %+v", stack.Kafka)
	}
	workers(t, stack)
	base := serve(t, stack)
	id := createRun(t, base, "secure-1", "assistant", threeSteps)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 2)
	assertHistory(t, getMessages(t, base, id), threeStepsHistory())

	// What goes wrong says what: a wrong password, plaintext, no client
	// certificate.
	for _, c := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"wrong kafka password", map[string]string{app.EnvKafkaPassword: "nope"}, "kafka brokers unreachable"},
		{"kafka without TLS", map[string]string{app.EnvKafkaCA: ""}, "kafka brokers unreachable"},
		{"wrong redis password", map[string]string{app.EnvRedisPassword: "nope"}, "WRONGPASS"},
		{"redis without a client certificate", map[string]string{app.EnvRedisCert: "", app.EnvRedisKey: ""}, "redis at 127.0.0.1"},
		{"redis certificate without its key", map[string]string{app.EnvRedisKey: ""}, "give both the certificate and its key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for env, v := range c.env {
				t.Setenv(env, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := app.Connect(ctx, infra{brokers: brokers, redisURL: redisURL}.options(parseConfig(t, testConfig)))
			if err == nil {
				_ = s.Close()
				t.Fatal("connected")
			}
			if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret-1") {
				t.Fatalf("error %q, want it to say %q and no password", err, c.want)
			}
		})
	}
}

// Each SASL mechanism logs in; a wrong password does not.
func TestSecure_every_sasl_mechanism_logs_in(t *testing.T) {
	certs := testinfra.NewCerts(t)
	for _, mech := range kafka.SASLMechanisms {
		t.Run(mech, func(t *testing.T) {
			login := kafka.SASL{Mechanism: mech, User: "u-" + mech, Password: "p-" + mech}
			brokers := testinfra.KafkaSecure(t, certs, login)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			link := kafka.Cluster{Brokers: brokers, TLS: certs.Client(t), SASL: login}
			if err := kafka.Check(ctx, link); err != nil {
				t.Fatalf("%s: %v", mech, err)
			}
			link.SASL.Password = "wrong"
			if err := kafka.Check(ctx, link); err == nil {
				t.Fatalf("%s: a wrong password logged in", mech)
			}
		})
	}
}

// kcat (librdkafka) reaches the embedded broker over TLS, verifying its
// certificate. Not with SASL: kfake serves SaslHandshake v1 only, and
// librdkafka 2.0 refuses SASL unless a broker also lists v0, as every
// Apache Kafka does; Sarama (the programs' client) takes v1.
func TestSecure_kcat_reaches_the_embedded_broker_over_TLS(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed")
	}
	certs := testinfra.NewCerts(t)
	k, err := embedded.StartKafka("127.0.0.1:0", embedded.WithTLS(certs.Server), embedded.WithTopics("tls-topic"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kcat, "-L", "-b", k.Addrs()[0], "-m", "5",
		"-X", "security.protocol=SSL", "-X", "ssl.ca.location="+certs.CA).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `topic "tls-topic"`) {
		t.Fatalf("kcat -L over SSL: %v\n%s", err, out)
	}
	out, err = exec.CommandContext(ctx, kcat, "-L", "-b", k.Addrs()[0], "-m", "2").CombinedOutput()
	if err == nil {
		t.Fatalf("kcat without TLS listed the broker:\n%s", out)
	}
}
