// Package stepworker is the thinking half of stepwise: the Step handler (on
// run-steps: claim the step with a lease, run the model, commit the assistant
// turn and one record per tool call), the StepEnd handler (on tool-results:
// the fan-in of a step), the decision handler (on decisions: apply, hold or
// reject a decision; cancel a run) and the sweeper.
//
// What follows a write is never a handler's own follow-up: every handler,
// on every outcome (duplicates and stale messages too), and the sweeper, for
// every run that comes due, call one reconcile (reconcile.go) that derives
// from what Redis holds what the run needs next — publish the calls or the
// next step request, set the run waiting, end the step, apply held
// decisions and approval timeouts, re-drive dead leases, publish the result
// — and does it. So a worker killed between any two of its writes and
// publishes loses nothing.
//
// Handlers take a pool slot, claim the work and acknowledge; inference runs
// on the bounded pool so a slow model never holds a Kafka partition. Every
// tenant with work keeps a share of the pool (shares.go), and a cancelled
// run's inference stops within about two ticks of the watch, on any worker
// (inferring.go, ADR 0065). Drain ends a graceful
// shutdown.
//
//	w, err := stepworker.New(ctx, stepworker.Config{Store: st, Publisher: pub, Names: names, Config: cfg, WorkerID: id})
//	router.AddNoPublisherHandler("step", names.RunSteps(), sub, w.HandleStep)
//	router.AddNoPublisherHandler("step-end", names.ToolResults(), sub, w.HandleToolResult)
//	go w.RunSweeper(ctx)
//	defer w.Drain(cfg.StepWorker.ShutdownGrace.Duration) // after the router stopped
package stepworker
