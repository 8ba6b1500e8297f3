package kafka

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// The SASL mechanisms stepwise speaks.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// SASLMechanisms lists them, for messages and flags.
var SASLMechanisms = []string{SASLPlain, SASLScramSHA256, SASLScramSHA512}

// Cluster is how to reach the brokers: their addresses and, when the
// brokers ask for them, TLS and a SASL login; and the largest record they
// take. Every function of this package that talks to Kafka takes one.
type Cluster struct {
	Brokers []string
	TLS     *tls.Config // nil: plaintext
	SASL    SASL        // zero: no SASL
	// MaxMessageBytes is the largest record a [Publisher] sends (Sarama's
	// Producer.MaxMessageBytes); a bigger one is refused before it leaves,
	// with topics.ErrTooLarge. 0: Sarama's default, 1 MiB, which a batch
	// of one such record fits in under the brokers' default
	// message.max.bytes (1048588). It must not be above the brokers'
	// message.max.bytes (or the topic's max.message.bytes), whose refusals
	// are ErrTooLarge too.
	MaxMessageBytes int
}

// SASL is a SASL login: Mechanism one of SASLMechanisms.
type SASL struct {
	Mechanism string
	User      string
	Password  string
}

// Plain returns a cluster of brokers with neither TLS nor SASL.
func Plain(brokers ...string) Cluster { return Cluster{Brokers: brokers} }

// String names the brokers, for messages (never the password).
func (c Cluster) String() string { return strings.Join(c.Brokers, ",") }

// Validate says what is wrong with the SASL settings.
func (c Cluster) Validate() error {
	s := c.SASL
	if s == (SASL{}) {
		return nil
	}
	if !slices.Contains(SASLMechanisms, s.Mechanism) {
		return fmt.Errorf("kafka SASL mechanism %q: want one of %s", s.Mechanism, strings.Join(SASLMechanisms, ", "))
	}
	if s.User == "" || s.Password == "" {
		return fmt.Errorf("kafka SASL %s needs a user and a password", s.Mechanism)
	}
	return nil
}

// SaramaConfig returns the package's SaramaConfig with c's TLS, SASL and
// MaxMessageBytes applied.
func (c Cluster) SaramaConfig() *sarama.Config {
	cfg := SaramaConfig()
	if c.MaxMessageBytes > 0 {
		cfg.Producer.MaxMessageBytes = c.MaxMessageBytes
	}
	if c.TLS != nil {
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = c.TLS.Clone()
	}
	if s := c.SASL; s.Mechanism != "" {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Handshake = true
		cfg.Net.SASL.User = s.User
		cfg.Net.SASL.Password = s.Password
		cfg.Net.SASL.Mechanism = sarama.SASLMechanism(s.Mechanism)
		switch s.Mechanism {
		case SASLScramSHA256:
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.HashGeneratorFcn(sha256.New)} }
		case SASLScramSHA512:
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.HashGeneratorFcn(sha512.New)} }
		}
	}
	return cfg
}

// scramClient is Sarama's SCRAMClient over xdg-go/scram.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (s *scramClient) Begin(user, password, authzID string) error {
	c, err := s.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	s.conv = c.NewConversation()
	return nil
}

func (s *scramClient) Step(challenge string) (string, error) { return s.conv.Step(challenge) }

func (s *scramClient) Done() bool { return s.conv.Done() }
