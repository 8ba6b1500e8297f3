package store

import (
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Go decides every move a script makes, from the domain's tables
// (pipeline.RunStatus, pipeline.ToolCallStatus, pipeline.StepState): a
// script is given the status it may find (expect, or a set of them) and
// the one to set, and never names a status itself. A move the tables lack
// is a programming error, found when the package loads.

// callMove is to, once the table allows the move to it from every status
// of from; it panics otherwise.
func callMove(to pipeline.ToolCallStatus, from ...pipeline.ToolCallStatus) pipeline.ToolCallStatus {
	for _, st := range from {
		if !st.CanTransition(to) {
			panic(fmt.Sprintf("store: the call table has no move %s → %s", st, to))
		}
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
	if !m.From.CanTransition(m.To) {
		panic(fmt.Sprintf("store: the run table has no move %s → %s", m.From, m.To))
	}
	return m
}

// runEnd is to, the status of an ended run, once the table allows every
// run not ended yet to move to it; it panics otherwise. A script given it
// ends a run it does not find in it, and refuses one it does.
func runEnd(to pipeline.RunStatus) pipeline.RunStatus {
	for _, st := range runStatuses {
		if !st.Final() && !st.CanTransition(to) {
			panic(fmt.Sprintf("store: the run table has no move %s → %s", st, to))
		}
	}
	return to
}
