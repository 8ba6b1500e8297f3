// Command toolworker executes tool calls of the queues it is given (by
// default toolworker.queues of the configuration, else every queue). Run as
// many as the load needs; they share the work of a queue through their
// consumer group.
//
//	toolworker --config stepwise.yaml --queues payments,default
package main

import "github.com/stepwise-run/stepwise/internal/app"

func main() { app.Main(app.ToolWorker(nil)) }
