package embedded

import (
	"fmt"
	"net"
)

// listen opens a TCP listener on addr ("host:port"; port 0 picks a free one).
func listen(addr string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("listen address %q: %w", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// dialable returns the address clients should dial to reach a listener on
// a: a wildcard host ("", 0.0.0.0, ::) becomes 127.0.0.1.
func dialable(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
	}
	return tcp.String()
}

// advertised is a listener that reports a dialable address, so kfake's
// metadata tells clients an address they can connect to even when it
// listens on every interface.
type advertised struct {
	net.Listener
	addr net.Addr
}

func (l advertised) Addr() net.Addr { return l.addr }

func advertise(ln net.Listener) net.Listener {
	tcp, ok := ln.Addr().(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return ln
	}
	return advertised{Listener: ln, addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: tcp.Port}}
}
