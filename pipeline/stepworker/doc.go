// Package stepworker is the thinking half of stepwise: the Step handler (on
// run-steps: claim the step with a lease, run the model, commit the assistant
// turn and one record per tool call, publish the calls), the StepEnd handler
// (on tool-results: derive the step's status from its calls, dispatch the
// next call in sequential mode, and once every call is terminal append the
// tool results in call order and either end the run or request the next
// step), and the sweeper (re-drives work whose lease expired or whose message
// went missing, and ends a run with error once its retry budget is spent).
//
// Handlers only claim work and acknowledge; inference runs on a bounded pool
// so a slow model never holds a Kafka partition.
//
//	w, err := stepworker.New(ctx, stepworker.Config{Store: st, Publisher: pub, Names: names, Config: cfg, WorkerID: id})
//	router.AddNoPublisherHandler("step", names.RunSteps(), sub, w.HandleStep)
//	router.AddNoPublisherHandler("step-end", names.ToolResults(), sub, w.HandleToolResult)
//	go w.RunSweeper(ctx)
//	defer w.Drain(cfg.StepWorker.ShutdownGrace.Duration) // after the router stopped
package stepworker
