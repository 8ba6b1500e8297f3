package embedded

import (
	"fmt"
	"net"

	"github.com/alicebob/miniredis/v2"
)

// Redis is a running in-process Redis (miniredis). Its methods are safe for
// concurrent use.
type Redis struct {
	m   *miniredis.Miniredis
	url string
}

// StartRedis starts miniredis listening on addr ("host:port"; port 0 picks a
// free one; a wildcard host listens everywhere and the URL names
// 127.0.0.1). Keys expire with the wall clock like on a real Redis. Data
// lives in memory only. Close it when done.
func StartRedis(addr string) (*Redis, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("start redis: listen address %q: %w", addr, err)
	}
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("start redis on %s: %w", addr, err)
	}
	return &Redis{m: m, url: "redis://" + dialable(m.Server().Addr()) + "/0"}, nil
}

// URL returns the redis:// URL of database 0.
func (r *Redis) URL() string { return r.url }

// Close stops the server and drops its connections.
func (r *Redis) Close() { r.m.Close() }
