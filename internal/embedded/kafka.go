package embedded

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/stepwise-run/stepwise/internal/kafka"
)

// DefaultPartitions is the partition count of topics the embedded broker
// creates by itself (seeded, auto-created, or created with -1 partitions).
const DefaultPartitions = 12

// KafkaOption changes a broker started by [StartKafka].
type KafkaOption func(*kafkaOptions)

type kafkaOptions struct {
	dataDir    string
	autoCreate bool
	partitions int
	seed       map[string]int32
	tls        *tls.Config
	sasl       kafka.SASL
	trimEvery  time.Duration
}

// WithTLS serves TLS only, with cfg's certificate: clients must speak TLS
// and trust it.
func WithTLS(cfg *tls.Config) KafkaOption {
	return func(o *kafkaOptions) { o.tls = cfg }
}

// WithSASL requires every client to log in with SASL; login is a superuser
// (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512). More users can log in through
// the same mechanisms once added with kfake's admin requests.
func WithSASL(login kafka.SASL) KafkaOption {
	return func(o *kafkaOptions) { o.sasl = login }
}

// WithDataDir keeps the broker's topics, messages and committed offsets in
// dir (created if needed) and reloads them on the next start with the same
// dir. Restart on the same fixed address: clients remember it. Without it
// everything lives in memory and is gone at Close.
func WithDataDir(dir string) KafkaOption {
	return func(o *kafkaOptions) { o.dataDir = dir }
}

// WithAutoCreateTopics lets producers and consumers create a topic by
// naming it, with the default partition count ([WithPartitions]). Off by
// default: stepwise creates its topics explicitly, and a typo in a topic
// name should fail rather than create a topic.
func WithAutoCreateTopics() KafkaOption {
	return func(o *kafkaOptions) { o.autoCreate = true }
}

// WithPartitions sets the partition count of auto-created and seeded topics,
// default [DefaultPartitions].
func WithPartitions(n int) KafkaOption {
	return func(o *kafkaOptions) { o.partitions = n }
}

// WithTrimEvery sets how often the broker drops the records every consumer
// group reading them has committed, and those past their topic's time
// retention (trim.go); default [DefaultTrimEvery], 0 never (the broker
// then keeps every record, as kfake does).
func WithTrimEvery(d time.Duration) KafkaOption {
	return func(o *kafkaOptions) { o.trimEvery = d }
}

// WithTopics creates the named topics at start with the default partition
// count, unless they were reloaded from the data dir.
func WithTopics(names ...string) KafkaOption {
	return func(o *kafkaOptions) {
		for _, n := range names {
			o.seed[n] = -1
		}
	}
}

// Kafka is a running in-process Kafka-protocol broker. Its methods are safe
// for concurrent use.
type Kafka struct {
	cluster *kfake.Cluster
	reaper  *reaper
	trimmer *trimmer // nil when it never trims
	addrs   []string
	close   sync.Once
}

// StartKafka starts a single kfake broker listening on addr ("host:port").
// Port 0 picks a free port; a wildcard host listens on every interface and
// advertises 127.0.0.1. It fails when the address is taken or the data dir
// cannot be read. Close it when done.
//
// Unlike Apache Kafka, the broker removes a dynamic consumer-group member
// as soon as the connection it joined over closes, as if it had left
// cleanly, instead of after its session timeout; a static member's session
// timeout still applies. This works around a kfake bug that could keep a
// killed member, and its partitions, in the group for ever (see reaper.go
// and docs/adr/0006-consumer-group-recovery.md).
func StartKafka(addr string, opts ...KafkaOption) (*Kafka, error) {
	o := kafkaOptions{partitions: DefaultPartitions, seed: map[string]int32{}, trimEvery: DefaultTrimEvery}
	for _, opt := range opts {
		opt(&o)
	}
	if o.partitions < 1 {
		return nil, fmt.Errorf("start kafka: %d partitions, want ≥ 1", o.partitions)
	}
	if o.trimEvery < 0 {
		return nil, fmt.Errorf("start kafka: trim every %v, want ≥ 0", o.trimEvery)
	}
	ln, err := listen(addr)
	if err != nil {
		return nil, fmt.Errorf("start kafka: %w", err)
	}
	reap := newReaper()
	used := false
	kopts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.DefaultNumPartitions(o.partitions),
		kfake.BrokerConfigs(map[string]string{"log.segment.bytes": strconv.Itoa(segmentBytes)}),
		// kfake asks for 127.0.0.1:<port>; hand it the listener opened on
		// addr instead.
		kfake.ListenFn(func(string, string) (net.Listener, error) {
			if used {
				return nil, errors.New("embedded kafka runs a single broker")
			}
			used = true
			return tracked{Listener: advertise(ln), onOpen: reap.connOpened, onClose: reap.connClosed}, nil
		}),
	}
	if o.dataDir != "" {
		kopts = append(kopts, kfake.DataDir(o.dataDir))
	}
	if o.tls != nil {
		kopts = append(kopts, kfake.TLS(o.tls))
		reap.admin.link.TLS = &tls.Config{InsecureSkipVerify: true} // its own listener, in this process
	}
	if o.sasl != (kafka.SASL{}) {
		// The reaper logs in as a PLAIN superuser of its own.
		reap.admin.link.SASL = kafka.SASL{Mechanism: kafka.SASLPlain, User: "stepwise-embedded-reaper", Password: rand.Text()}
		kopts = append(kopts, kfake.EnableSASL(),
			kfake.Superuser(o.sasl.Mechanism, o.sasl.User, o.sasl.Password),
			kfake.Superuser(reap.admin.link.SASL.Mechanism, reap.admin.link.SASL.User, reap.admin.link.SASL.Password))
	}
	if o.autoCreate {
		kopts = append(kopts, kfake.AllowAutoTopicCreation())
	}
	for name, p := range o.seed {
		kopts = append(kopts, kfake.SeedTopics(p, name))
	}
	cluster, err := kfake.NewCluster(kopts...)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("start kafka on %s: %w", addr, err)
	}
	k := &Kafka{cluster: cluster, reaper: reap, addrs: cluster.ListenAddrs()}
	reap.start(cluster, k.addrs[0])
	if o.trimEvery > 0 {
		k.trimmer = newTrimmer(o.trimEvery)
		k.trimmer.admin.link = reap.admin.link // its login too
		k.trimmer.start(cluster, k.addrs[0])
	}
	return k, nil
}

// Addrs returns the broker addresses clients dial ("127.0.0.1:PORT").
func (k *Kafka) Addrs() []string { return append([]string(nil), k.addrs...) }

// Close stops the broker, drops its connections and, with a data dir,
// writes its state to disk. Calling it again does nothing.
func (k *Kafka) Close() {
	k.close.Do(func() {
		k.reaper.close()
		if k.trimmer != nil {
			k.trimmer.close()
		}
		k.cluster.Close()
	})
}
