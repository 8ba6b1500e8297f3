// Package app wires stepwise's programs: it reads the addresses and the
// configuration, connects to Kafka and Redis (failing fast and clearly when
// either is missing or unreachable), creates the topics, and runs the step
// worker, the tool worker and the gateway — each alone, as the cmd/ programs
// do, or all together, as `stepwise dev` does.
//
//	stack, err := app.Connect(ctx, app.Options{ConfigPath: "stepwise.yaml"})
//	defer stack.Close()
//	err = stack.RunStepWorker(ctx) // until ctx ends
package app
