// Package customplugin shows how to extend stepwise with a plugin of one's
// own: package audit is the plugin, Registry adds it to stepwise's
// built-ins, and cmd/stepworker and cmd/toolworker are the worker binaries
// built with that registry. See README.md.
package customplugin

import (
	"github.com/stepwise-run/stepwise/examples/custom-plugin/audit"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

// Registry returns the plugins this build offers agents: stepwise's
// built-ins plus audit. Both workers must be built with the same registry.
func Registry() *plugin.Registry {
	r := builtin.Registry()
	r.Add(audit.Name, audit.New)
	return r
}
