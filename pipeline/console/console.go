package console

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Files are the console's files: index.html, app.js, style.css.
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree always has static/
	}
	return sub
}

// securityHeaders is what every console file is served with: no script,
// style or connection from anywhere but the gateway itself, no framing.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
	"X-Frame-Options":         "DENY",
	"Referrer-Policy":         "no-referrer",
	"Cache-Control":           "no-cache",
}

// Handler serves the console: / is index.html, /console/<file> the rest.
func Handler() http.Handler {
	files := http.FileServerFS(Files())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		if r.URL.Path == "/" {
			http.ServeFileFS(w, r, Files(), "index.html")
			return
		}
		http.StripPrefix("/console", files).ServeHTTP(w, r)
	})
}
