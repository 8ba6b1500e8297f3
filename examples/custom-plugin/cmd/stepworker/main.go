// Command stepworker is stepwise's step worker built with the audit plugin
// besides the built-ins: the same program as cmd/stepworker, one option
// more.
//
//	go build -o stepworker ./examples/custom-plugin/cmd/stepworker
//	stepworker --config examples/custom-plugin/stepwise.yaml --kafka localhost:9092 --redis redis://localhost:6379/0
package main

import (
	customplugin "github.com/stepwise-run/stepwise/examples/custom-plugin"
	"github.com/stepwise-run/stepwise/internal/app"
)

func main() { app.Main(app.StepWorker(customplugin.Registry())) }
