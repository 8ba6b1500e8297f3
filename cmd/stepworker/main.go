// Command stepworker runs the Step and StepEnd handlers, the decision
// handler and the sweeper against a Kafka and a Redis given by flags or the
// environment.
//
//	stepworker --config stepwise.yaml --kafka localhost:9092 --redis redis://localhost:6379/0
package main

import "github.com/stepwise-run/stepwise/internal/app"

func main() { app.Main(app.StepWorker(nil)) }
