package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"time"
)

// Gateway holds the settings of the gateway's HTTP server (yaml key
// "gateway"): which browser origins may call it, and the limits that keep a
// slow or greedy client from holding it.
type Gateway struct {
	// CORSOrigins are the origins ("https://console.example.com") whose
	// pages may call the API from a browser; "*" allows any. Empty (the
	// default): none, and a state-changing request from a page of another
	// origin is refused.
	CORSOrigins []string `json:"cors_origins,omitempty"`
	// AllowedHosts are the host names ("stepwise.lan") or addresses, no
	// port, that a gateway without API keys answers to besides localhost,
	// *.localhost and IP addresses; a request with another Host is refused
	// (a page that reaches the gateway under its own name may be a DNS
	// rebinding attack). Not used when auth has keys.
	AllowedHosts []string `json:"allowed_hosts,omitempty"`
	// ReadHeaderTimeout bounds reading a request's headers; default 10s.
	ReadHeaderTimeout Duration `json:"read_header_timeout,omitzero"`
	// ReadTimeout bounds reading a whole request, body included: a body
	// that stalls is cut. Default 60s.
	ReadTimeout Duration `json:"read_timeout,omitzero"`
	// WriteTimeout bounds writing a response; an event stream gets it anew
	// for every write. Default 60s.
	WriteTimeout Duration `json:"write_timeout,omitzero"`
	// IdleTimeout is how long a kept-alive connection may wait for its
	// next request; default 120s.
	IdleTimeout Duration `json:"idle_timeout,omitzero"`
	// MaxHeaderBytes caps a request's headers; default 65536. Larger ones
	// are answered 431.
	MaxHeaderBytes int `json:"max_header_bytes,omitempty"`
	// MaxStreamsPerKey caps the event streams one API key (or, with no
	// keys, one client address) holds open at once, per gateway process;
	// default 64. One more is answered 429.
	MaxStreamsPerKey int `json:"max_streams_per_key,omitempty"`
}

// hostPattern is a DNS name: labels of letters, digits and inner hyphens
// (underscores too, as some internal names have), an optional final dot.
var hostPattern = regexp.MustCompile(`^([A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?\.)*[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?\.?$`)

func (g *Gateway) setDefaults() {
	if g.ReadHeaderTimeout.Duration == 0 {
		g.ReadHeaderTimeout = D(10 * time.Second)
	}
	if g.ReadTimeout.Duration == 0 {
		g.ReadTimeout = D(60 * time.Second)
	}
	if g.WriteTimeout.Duration == 0 {
		g.WriteTimeout = D(60 * time.Second)
	}
	if g.IdleTimeout.Duration == 0 {
		g.IdleTimeout = D(120 * time.Second)
	}
	if g.MaxHeaderBytes == 0 {
		g.MaxHeaderBytes = 64 << 10
	}
	if g.MaxStreamsPerKey == 0 {
		g.MaxStreamsPerKey = 64
	}
}

func (g Gateway) check(ps *problems, path string) {
	for i, o := range g.CORSOrigins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			ps.add(fmt.Sprintf("%s.cors_origins[%d]", path, i), fmt.Sprintf("%q: want an origin, scheme://host[:port], or *", o))
		}
	}
	for i, h := range g.AllowedHosts {
		if !hostPattern.MatchString(h) && net.ParseIP(h) == nil {
			ps.add(fmt.Sprintf("%s.allowed_hosts[%d]", path, i), fmt.Sprintf("%q: want a host name or an IP address, without scheme or port", h))
		}
	}
	nonNegativeDuration(ps, field(path, "read_header_timeout"), g.ReadHeaderTimeout)
	nonNegativeDuration(ps, field(path, "read_timeout"), g.ReadTimeout)
	nonNegativeDuration(ps, field(path, "write_timeout"), g.WriteTimeout)
	nonNegativeDuration(ps, field(path, "idle_timeout"), g.IdleTimeout)
	nonNegative(ps, field(path, "max_header_bytes"), int64(g.MaxHeaderBytes))
	nonNegative(ps, field(path, "max_streams_per_key"), int64(g.MaxStreamsPerKey))
}
