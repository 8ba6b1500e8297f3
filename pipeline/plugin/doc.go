// Package plugin is how stepwise is extended: a plugin registers hooks for
// any of the nine phases and handlers for scheduled actions; a hook or a
// handler returns a Command — state updates and more actions to schedule
// (the seeds' StateCommand). Actions run in their target phase's
// convergence loop: a handler may schedule more, up to MaxRounds rounds;
// past it the phase fails with ErrPhaseRunLoopExceeded: in the step worker
// the run ends with error, in the tool worker the call fails. A failing
// handler is recorded in the run's failed actions and not retried.
//
//	type greeter struct{}
//
//	func (greeter) Register(r *plugin.Registrar) error {
//		r.Hook(pipeline.PhaseBeforeInference, func(ctx context.Context, pc *plugin.Context) (plugin.Command, error) {
//			var cmd plugin.Command
//			err := cmd.Schedule(plugin.AddContextMessage, plugin.ContextMessage{Role: "system", Content: "Be kind."})
//			return cmd, err
//		})
//		return nil
//	}
//
//	reg := plugin.NewRegistry()
//	reg.Add("greeter", func(json.RawMessage) (plugin.Plugin, error) { return greeter{}, nil })
//
// State keys are typed (Key[T]); keys registered persistent are
// checkpointed with the run (committed atomically with what their phase run
// writes — the step's commit, a call's outcome, the step's end, the run's
// end —, so work delivered twice changes them once) and shown in GET
// /v1/runs/{id}. Hooks may run more than once under redelivery: they must
// be replay-safe, which they are when their effects go through the Command.
// What costs too much to make twice (a summary a model writes) a handler
// keeps at once with Context.Keep, and finds in the state when the step
// runs again.
//
// A plugin may also execute a tool (Registrar.Tool, for tools declared
// executor: {plugin: NAME}) and return a Command with its result
// (WithCommand). An action that cannot run where it is aimed is recorded as
// failed (Set.Strand), never dropped.
//
// Which process runs a phase: BeforeToolExecute and AfterToolExecute run in
// the tool worker, every other phase in the step worker.
package plugin
