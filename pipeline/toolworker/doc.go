// Package toolworker executes tool calls. It consumes the tool-calls topics
// of its queues, claims each call in the store with a lease, acknowledges,
// and runs the tool on a bounded pool with the tool's timeout while renewing
// the lease; then it commits the outcome (succeeded, failed, or suspended
// when the tool returned pending) with a check that the lease is still its
// own, and reports it on tool-results. A claim in a step that runs its
// calls in parallel also takes, on the pool's free slots, the step's other
// calls that wait for their first claim; their requests, behind it on the
// partition, are then acknowledged without a claim of their own (ADR 0025).
//
// A call cancelled while its tool runs (its run's cancel) is stopped: the
// worker reads the status of the calls it has run longer than a tick in
// one round trip every tick, cancels the tool's context of those
// cancelled, and commits nothing (running.go, ADR 0065).
//
// A worker that dies mid-tool commits nothing: its lease runs out and the
// step worker's reconcile publishes the call again for another worker. A
// worker that is stopped (Drain) lets its executions finish within the
// grace period and releases the leases of the rest. A request for a call
// that has already finished publishes its ToolCallFinished again: the
// worker that finished it may have died before reporting it.
//
//	w, err := toolworker.New(ctx, toolworker.Config{Store: st, Publisher: pub, Names: names, Config: cfg, WorkerID: id})
//	for _, q := range cfg.Queues() {
//		router.AddNoPublisherHandler("tool-"+q, names.ToolCalls(q), sub, w.HandleToolCall)
//	}
//	defer w.Drain(cfg.ToolWorker.ShutdownGrace.Duration) // after the router stopped
package toolworker
