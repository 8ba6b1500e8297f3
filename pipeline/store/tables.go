package store

import (
	"fmt"
	"slices"

	"github.com/stepwise-run/stepwise/pipeline"
)

// What the scripts are told of the domain's tables (pipeline/run.go,
// toolcall.go, stepstate.go): a script compares the status it reads with
// the one Go expects, sets the one Go computed, and looks a status up in
// a list Go derived from the tables. No script names a status itself.
var (
	// terminalStatuses are the statuses that end a call.
	terminalStatuses = statusesWhere(callStatuses, pipeline.ToolCallStatus.Terminal)
	// inFlightStatuses are those of a call in flight: the ones that keep
	// its run running (pipeline.DeriveRunStatus). The run's `open` count
	// of a parallel step counts its calls in them (lib.lua's move_open).
	inFlightStatuses = statusesWhere(callStatuses, func(st pipeline.ToolCallStatus) bool {
		return pipeline.DeriveRunStatus([]pipeline.ToolCallStatus{st}) == pipeline.RunRunning
	})
	// claimableStatuses are those, other than running, a claim moves to
	// running (a running call's expired lease is taken over).
	claimableStatuses = statusesWhere(callStatuses, func(st pipeline.ToolCallStatus) bool {
		return st != pipeline.CallRunning && st.CanTransition(pipeline.CallRunning)
	})
	// finalRuns are the statuses of a run that has ended.
	finalRuns = statusesWhere(runStatuses, pipeline.RunStatus.Final)
)

// statusesWhere lists the statuses of all that keep holds of, in all's
// order.
func statusesWhere[S ~string](all []S, keep func(S) bool) []S {
	var out []S
	for _, st := range all {
		if keep(st) {
			out = append(out, st)
		}
	}
	return out
}

// moving is a status, step state or the like whose table says which moves
// exist.
type moving[S any] interface {
	~string
	CanTransition(to S) bool
}

// moved is to, the state Go computed for a script to set in place of
// from: a move the domain's table does not have is a bug of the caller,
// and panics.
func moved[S moving[S]](from, to S) S {
	if !from.CanTransition(to) {
		panic(fmt.Sprintf("store: %s → %s is not a move of the domain's table", from, to))
	}
	return to
}

// stepStates are the step's states, in the table's order.
var stepStates = []pipeline.StepState{pipeline.StepPending, pipeline.StepInferring, pipeline.StepTools, pipeline.StepAwaitingInference}

// statesTo are those of all that the tables let move to `to`.
func statesTo[S moving[S]](all []S, to S) []S {
	return slices.DeleteFunc(slices.Clone(all), func(from S) bool { return !from.CanTransition(to) })
}

// movedFrom is to, once the table allows the move to it from every state of
// from; it panics otherwise.
func movedFrom[S moving[S]](to S, from ...S) S {
	for _, st := range from {
		moved(st, to)
	}
	return to
}

// runMove is a move of a run a script makes when it finds the run in From.
type runMove struct {
	From pipeline.RunStatus `json:"from"`
	To   pipeline.RunStatus `json:"to"`
}

// checked is m, once the run table allows it; it panics otherwise.
func (m runMove) checked() runMove {
	moved(m.From, m.To)
	return m
}

// runEnd is to, the status of an ended run, once the table allows every
// run not ended yet to move to it; it panics otherwise. A script given it
// ends a run it does not find in it, and refuses one it does.
func runEnd(to pipeline.RunStatus) pipeline.RunStatus {
	return movedFrom(to, statusesWhere(runStatuses, func(st pipeline.RunStatus) bool { return !st.Final() })...)
}
