package embedded

import (
	"errors"
	"time"

	"github.com/IBM/sarama"

	"github.com/stepwise-run/stepwise/internal/kafka"
)

// admin is a connection of the broker's own housekeeping (the reaper, the
// trimmer) to the broker, over the Kafka protocol, for what kfake offers no
// call for. It is opened on first use and dropped on an error, to be
// opened again by the next use. Not safe for concurrent use: each
// housekeeper has its own.
type admin struct {
	addr   string        // the broker
	link   kafka.Cluster // TLS and SASL of the connection, when the broker wants them
	client string        // the client ID it connects with
	broker *sarama.Broker
}

// groups lists the broker's groups.
func (a *admin) groups() ([]string, error) {
	b, err := a.conn()
	if err != nil {
		return nil, err
	}
	resp, err := b.ListGroups(&sarama.ListGroupsRequest{})
	if err != nil {
		a.drop()
		return nil, err
	}
	if !errors.Is(resp.Err, sarama.ErrNoError) {
		return nil, resp.Err
	}
	names := make([]string, 0, len(resp.Groups))
	for g := range resp.Groups {
		names = append(names, g)
	}
	return names, nil
}

// conn returns the connection, opening it if needed.
func (a *admin) conn() (*sarama.Broker, error) {
	if a.broker != nil {
		return a.broker, nil
	}
	cfg := a.link.SaramaConfig()
	cfg.ClientID = a.client
	cfg.Net.DialTimeout = 2 * time.Second
	cfg.Net.ReadTimeout = 2 * time.Second
	cfg.Net.WriteTimeout = 2 * time.Second
	b := sarama.NewBroker(a.addr)
	if err := b.Open(cfg); err != nil {
		return nil, err
	}
	if ok, err := b.Connected(); !ok {
		_ = b.Close()
		if err == nil {
			err = errors.New("not connected")
		}
		return nil, err
	}
	a.broker = b
	return b, nil
}

// drop closes the connection, if open.
func (a *admin) drop() {
	if a.broker != nil {
		_ = a.broker.Close()
		a.broker = nil
	}
}
