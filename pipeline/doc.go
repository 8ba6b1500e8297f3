// Package pipeline holds the domain of stepwise: the run and tool-call state
// machines, the projection of a run's status from its calls, termination
// reasons, the nine phases, and the records and messages a run is made of.
//
// Everything here is pure: no I/O, no clock, no goroutines, no dependence on
// map order. The store, the workers and the gateway live in sub-packages and
// call into these functions to decide what may happen.
//
//	if !pipeline.RunRunning.CanTransition(pipeline.RunWaiting) { ... }
//
//	status := pipeline.DeriveRunStatus(calls) // running, waiting or done
package pipeline
