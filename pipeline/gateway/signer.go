package gateway

import "github.com/stepwise-run/stepwise/topics"

// Signer is the producer name and key the gateway signs decisions with.
type Signer struct {
	Producer string
	Key      []byte
}

// sign returns d signed; a nil Signer returns it as it is. The body's own
// producer and signature fields, if a client sent any, are replaced: the
// gateway vouches for what it publishes.
func (s *Signer) sign(d topics.Decision) (topics.Decision, error) {
	if s == nil {
		d.Producer, d.Signature = "", ""
		return d, nil
	}
	return topics.Sign(d, s.Producer, s.Key)
}
