// Command toolworker is stepwise's tool worker built with the same plugins
// as ./cmd/stepworker. The tool worker runs the BeforeToolExecute and
// AfterToolExecute hooks (result_guard's among them) and builds every
// agent's plugins when it starts, so it must know every plugin the
// configuration enables, even one like audit that has no hook here.
//
//	go build -o toolworker ./examples/custom-plugin/cmd/toolworker
//	toolworker --config examples/custom-plugin/stepwise.yaml --queues default
package main

import (
	customplugin "github.com/stepwise-run/stepwise/examples/custom-plugin"
	"github.com/stepwise-run/stepwise/internal/app"
)

func main() { app.Main(app.ToolWorker(customplugin.Registry())) }
