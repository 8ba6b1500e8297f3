package gateway

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// hosts are the names a gateway without API keys answers to: the loopback
// names, any IP address, and Config.AllowedHosts.
//
// Such a gateway serves whoever reaches it, so it must tell a request a
// web page made through DNS rebinding (a name of the page's own, made to
// resolve to the gateway) from one sent to the gateway: the browser sends
// the page's name as Host, and Host is then also the page's Origin, which
// passes as same-origin (cors.go). A name the gateway does not know is
// refused. An IP address or a loopback name (localhost, *.localhost) is
// never a page's own name that DNS could point elsewhere. With API keys
// the check is off: a rebound page has no key to send.
type hosts map[string]bool

func newHosts(list []string) hosts {
	h := hosts{}
	for _, v := range list {
		h[canonicalHost(v)] = true
	}
	return h
}

// serves reports whether hostport, a request's Host, names this gateway.
// A request with no Host (HTTP/1.0) is not a browser's and is served.
func (h hosts) serves(hostport string) bool {
	host := canonicalHost(hostport)
	if host == "" || h[host] || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	return net.ParseIP(host) != nil
}

// canonicalHost is the host of a Host header: its port and IPv6 brackets
// left out, lower case, without the trailing dot of a fully qualified name.
func canonicalHost(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// checkHost refuses, with 403, a request to a gateway without API keys
// whose Host is not one it serves.
func (s *Server) checkHost(next http.Handler) http.Handler {
	if len(s.cfg.Keys) > 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts.serves(r.Host) {
			writeError(w, apiErr(http.StatusForbidden, CodeForbidden, fmt.Sprintf(
				"host %q is not one this gateway serves: without API keys it answers only to localhost, IP addresses and gateway.allowed_hosts (a page that reaches it under another name may be a DNS rebinding attack)", r.Host)))
			return
		}
		next.ServeHTTP(w, r)
	})
}
