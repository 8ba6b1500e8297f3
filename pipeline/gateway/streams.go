package gateway

import (
	"net"
	"net/http"
	"sync"
)

// streamCounter caps the event streams open at once per owner (an API key,
// or with no keys a client IP) on this gateway process.
type streamCounter struct {
	mu   sync.Mutex
	max  int
	open map[string]int
}

func newStreamCounter(max int) *streamCounter {
	return &streamCounter{max: max, open: map[string]int{}}
}

// acquire takes a stream for owner; ok is false when owner holds max
// already. release gives it back.
func (c *streamCounter) acquire(owner string) (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[owner] >= c.max {
		return nil, false
	}
	c.open[owner]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.open[owner]--; c.open[owner] == 0 {
			delete(c.open, owner)
		}
	}, true
}

// streamOwner is whom r's stream counts against.
func streamOwner(r *http.Request) string {
	if p := principalOf(r); p.Name != "" {
		return "key:" + p.Name
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "ip:" + host
}
