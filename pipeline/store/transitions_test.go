package store_test

import (
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

// The tests in transitions_test.go and transitions_explore_test.go keep
// one truth for status transitions: pipeline's tables (RunStatus,
// ToolCallStatus, StepState .CanTransition). Go computes every status a
// script sets from them and no script names one
// (TestScripts_take_one_JSON_argument_and_name_no_status); what is left to
// tie is which moves each operation makes:
//
//  1. Pure (TestTransitions_declared_moves_are_allowed_by_the_domain_tables):
//     every move scriptMoves declares is allowed by the tables. A record is
//     created created (a run) or new, or in a status ToolGate moves a new
//     call to without running it (a call).
//  2. Behavioural (TestTransitions_redis, TestTransitions_miniredis): explore
//     starts from an empty store and drives every store operation that runs
//     a script, in its variants, from every state it reaches that way,
//     breadth first, forking each state into keys of its own so that every
//     operation starts from the same state. For each operation it compares
//     the run and its calls before and after, through the statuses the
//     run's event log records in between. Every move must be allowed by the
//     tables and declared for the script the operation runs; the log must
//     end at the stored status (no status change without its event); a
//     refusal must be one of the store's sentinels; and every declared move
//     must be made from some state, so a declaration can neither claim
//     moves no script makes nor cover moves the exploration does not reach.

// scriptMoves is what one script does to statuses: the moves it makes,
// "from→to", "→to" for a record it creates.
type scriptMoves struct {
	run  []string
	call []string
}

// statusMoves declares the moves of every script that makes one.
var statusMoves = map[string]scriptMoves{
	"create_run.lua": {
		run: []string{"→created"},
	},
	"claim_step.lua": {
		run: []string{"created→running"},
	},
	"commit_step.lua": {
		call: []string{"→new", "→suspended", "→succeeded", "→failed", "→cancelled"},
	},
	"end_step.lua": {
		run: []string{"running→done"},
	},
	"finish_run.lua": {
		run: []string{"created→done", "running→done", "waiting→done"},
	},
	"set_waiting.lua": {
		run: []string{"running→waiting"},
	},
	"cancel_run.lua": {
		run:  []string{"created→done", "running→done", "waiting→done"},
		call: []string{"new→cancelled", "running→cancelled", "suspended→cancelled", "resuming→cancelled"},
	},
	"claim_call.lua": {
		call: []string{"new→running", "resuming→running"},
	},
	"finish_call.lua": {
		call: []string{"running→succeeded", "running→failed", "running→suspended"},
	},
	"apply_decision.lua": {
		run: []string{"waiting→running"},
		// A resume goes through resuming, also in use_decision_as_result
		// mode, where the call completes at once.
		call: []string{"suspended→resuming", "suspended→cancelled", "resuming→succeeded"},
	},
}

func TestTransitions_declared_moves_are_allowed_by_the_domain_tables(t *testing.T) {
	for name, w := range statusMoves {
		for kind, moves := range map[string][]string{"run": w.run, "call": w.call} {
			for _, m := range moves {
				from, to, ok := strings.Cut(m, "→")
				if !ok {
					t.Errorf("%s: move %q is not from→to", name, m)
					continue
				}
				if !allowedMove(kind, from, to) {
					t.Errorf("%s declares the %s move %s, which pipeline's table refuses", name, kind, m)
				}
			}
		}
	}
}

// allowedMove reports whether pipeline's tables allow a kind ("run" or
// "call") to move from → to; from "" creates the record.
func allowedMove(kind, from, to string) bool {
	if kind == "run" {
		if _, err := pipeline.ParseRunStatus(to); err != nil {
			return false
		}
		if from == "" {
			return pipeline.RunStatus(to) == pipeline.RunCreated
		}
		return pipeline.RunStatus(from).CanTransition(pipeline.RunStatus(to))
	}
	st, err := pipeline.ParseToolCallStatus(to)
	if err != nil {
		return false
	}
	if from == "" {
		// ToolGate may commit a call in a status a new call moves to
		// without being executed.
		return st == pipeline.CallNew || (st != pipeline.CallRunning && pipeline.CallNew.CanTransition(st))
	}
	return pipeline.ToolCallStatus(from).CanTransition(st)
}
