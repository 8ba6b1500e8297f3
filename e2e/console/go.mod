// The web console's test drives a headless Chromium with chromedp against
// `stepwise dev`; it is a module of its own so that chromedp stays out of
// the runtime module's go.mod (ADR 0052).
module github.com/stepwise-run/stepwise/e2e/console

go 1.26.8

require (
	github.com/chromedp/cdproto v0.0.0-20250724212937-08a3db8b4327
	github.com/chromedp/chromedp v0.14.2
)

require (
	github.com/chromedp/sysutil v1.1.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/gobwas/httphead v0.1.0 // indirect
	github.com/gobwas/pool v0.2.1 // indirect
	github.com/gobwas/ws v1.4.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
