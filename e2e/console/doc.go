// Package console tests the web console the gateway serves, in a real
// browser: a headless Chromium driven with chromedp against `stepwise dev`
// (the binary in STEPWISE_BIN, else one built from the repository), as a
// person with an API key uses it. It holds no code but its test.
//
//	cd e2e/console && go test ./...
//
// It is a module of its own, so that chromedp stays out of the runtime
// module's go.mod; `make test` runs it.
package console
