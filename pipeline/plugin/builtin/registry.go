package builtin

import "github.com/stepwise-run/stepwise/pipeline/plugin"

// Names of the built-in plugins, as agents enable them under
// agents.<name>.plugins.
const (
	Reminder      = "reminder"
	DeferredTools = "deferred_tools"
	ResultGuard   = "result_guard"
	LoopWarning   = "loop_warning"
	Compaction    = "compaction"
)

// Registry returns a new registry holding stepwise's built-in plugins. Each
// call returns a registry of its own, so a program may add its plugins to it
// (or replace a built-in by adding one under the same name) before it hands
// it to its workers.
func Registry() *plugin.Registry {
	r := plugin.NewRegistry()
	r.Add(Reminder, NewReminder)
	r.Add(DeferredTools, NewDeferredTools)
	r.Add(ResultGuard, NewResultGuard)
	r.Add(LoopWarning, NewLoopWarning)
	r.Add(Compaction, NewCompaction)
	return r
}
