package embedded

import (
	"fmt"
	"net"
	"sync"

	"github.com/alicebob/miniredis/v2"
)

// Redis is a running in-process Redis (miniredis). Its methods are safe for
// concurrent use.
type Redis struct {
	m       *miniredis.Miniredis
	expirer *expirer
	url     string
	close   sync.Once
}

// StartRedis starts miniredis listening on addr ("host:port"; port 0 picks a
// free one; a wildcard host listens everywhere and the URL names
// 127.0.0.1). Keys expire with the wall clock as on a real Redis, give or
// take the expirer's period (expire.go). Data lives in memory only. Close
// it when done.
func StartRedis(addr string) (*Redis, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("start redis: listen address %q: %w", addr, err)
	}
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("start redis on %s: %w", addr, err)
	}
	return &Redis{m: m, expirer: startExpirer(m), url: "redis://" + dialable(m.Server().Addr()) + "/0"}, nil
}

// URL returns the redis:// URL of database 0.
func (r *Redis) URL() string { return r.url }

// Close stops the server and drops its connections. Calling it again does
// nothing.
func (r *Redis) Close() {
	r.close.Do(func() {
		r.expirer.close()
		r.m.Close()
	})
}
