package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// origins is the allow-list of browser origins (Config.CORSOrigins).
type origins struct {
	any  bool
	list map[string]bool
}

func newOrigins(list []string) origins {
	o := origins{list: map[string]bool{}}
	for _, v := range list {
		if v == "*" {
			o.any = true
		}
		o.list[strings.TrimSuffix(strings.ToLower(v), "/")] = true
	}
	return o
}

func (o origins) allows(origin string) bool { return o.any || o.list[strings.ToLower(origin)] }

// crossOrigin applies the CORS allow-list to requests that carry an Origin
// of another host. An allowed origin gets the CORS headers (and its
// preflight a 204); any other gets none, so its page cannot read answers,
// and a state-changing request from it is refused with 403 before it does
// anything: browsers send a text/plain or form POST without asking first.
func (s *Server) crossOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || sameOrigin(r, origin) {
			next.ServeHTTP(w, r)
			return
		}
		allowed := s.origins.allows(origin)
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if !allowed && (preflight || !safeMethod(r.Method)) {
			writeError(w, apiErr(http.StatusForbidden, CodeForbidden,
				fmt.Sprintf("origin %s may not call this API from a browser (gateway.cors_origins)", origin)))
			return
		}
		if !allowed {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		if s.origins.any {
			h.Set("Access-Control-Allow-Origin", "*")
		} else {
			h.Set("Access-Control-Allow-Origin", origin)
		}
		if preflight {
			h.Set("Access-Control-Allow-Methods", "GET, POST")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin names the host the request was sent
// to (a page the gateway served itself).
func sameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}
