// Package demo is `stepwise demo`: it starts a whole stack in one process on
// the embedded broker and Redis, submits a batch of agent runs through the
// HTTP API (multi-step runs with parallel tool calls, runs whose tool fails,
// refunds that wait for approval, runs that answer at once), plays the
// outside system that approves or refuses the parked refunds through the
// decisions endpoint, follows their outcomes on the run-results topic
// as a batch consumer would, shows progress, and checks every run against
// what its script must produce.
//
//	report, err := demo.Run(ctx, demo.Options{Runs: 90, Out: os.Stdout})
//	if !report.OK() { os.Exit(1) }
package demo
