package store

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The Lua sources, one per operation. They check fields and write fields
// and events as Go computed them; times come in their argument, so they
// behave the same on Redis 7 and on miniredis.
var (
	//go:embed scripts/create_run.lua
	createRunLua string
	//go:embed scripts/claim_step.lua
	claimStepLua string
	//go:embed scripts/commit_step.lua
	commitStepLua string
	//go:embed scripts/end_step.lua
	endStepLua string
	//go:embed scripts/append_delta.lua
	appendDeltaLua string
	//go:embed scripts/renew_step_lease.lua
	renewStepLeaseLua string
	//go:embed scripts/defer_step.lua
	deferStepLua string
	//go:embed scripts/finish_run.lua
	finishRunLua string
	//go:embed scripts/claim_call.lua
	claimCallLua string
	//go:embed scripts/renew_call_lease.lua
	renewCallLeaseLua string
	//go:embed scripts/finish_call.lua
	finishCallLua string
	//go:embed scripts/set_waiting.lua
	setWaitingLua string
	//go:embed scripts/cancel_run.lua
	cancelRunLua string
	//go:embed scripts/apply_decision.lua
	applyDecisionLua string
	//go:embed scripts/drop_held.lua
	dropHeldLua string
	//go:embed scripts/list_runs.lua
	listRunsLua string
	//go:embed scripts/due_runs.lua
	dueRunsLua string
	//go:embed scripts/mark_sent.lua
	markSentLua string
	//go:embed scripts/take_back_marks.lua
	takeBackMarksLua string
	//go:embed scripts/reschedule_if.lua
	rescheduleIfLua string
	//go:embed scripts/snapshot.lua
	snapshotLua string
	//go:embed scripts/claim_outcomes.lua
	claimOutcomesLua string
	//go:embed scripts/budget_reserve.lua
	budgetReserveLua string
	//go:embed scripts/budget_settle.lua
	budgetSettleLua string
	//go:embed scripts/lib.lua
	libLua string
)

type scripts struct {
	createRun, claimStep, renewStepLease, deferStep, appendDelta, commitStep, endStep *redis.Script
	finishRun                                                                         *redis.Script
	claimCall, renewCallLease, finishCall                                             *redis.Script
	setWaiting, cancelRun, applyDecision, dropHeld                                    *redis.Script
	listRuns, dueRuns, markSent, takeBackMarks, rescheduleIf, claimOutcomes, snapshot *redis.Script
	budgetReserve, budgetSettle                                                       *redis.Script
}

// loadScripts prepares the scripts; those that end a run, write to an
// ended one, trim deltas, compact a stream, check a step's lease or return
// a hash they read whole start with what they call of lib.lua, after the
// constants it reads (consts, retention.go).
func loadScripts(consts string) scripts {
	lib := func(src string) *redis.Script { return redis.NewScript(consts + libFor()(src) + src) }
	return scripts{
		createRun:      lib(createRunLua),
		claimStep:      lib(claimStepLua),
		renewStepLease: lib(renewStepLeaseLua),
		deferStep:      lib(deferStepLua),
		appendDelta:    lib(appendDeltaLua),
		commitStep:     lib(commitStepLua),
		endStep:        lib(endStepLua),
		finishRun:      lib(finishRunLua),
		claimCall:      lib(claimCallLua),
		renewCallLease: redis.NewScript(renewCallLeaseLua),
		finishCall:     lib(finishCallLua),
		setWaiting:     lib(setWaitingLua),
		cancelRun:      lib(cancelRunLua),
		applyDecision:  lib(applyDecisionLua),
		dropHeld:       lib(dropHeldLua),
		listRuns:       redis.NewScript(listRunsLua),
		dueRuns:        redis.NewScript(dueRunsLua),
		markSent:       lib(markSentLua),
		takeBackMarks:  lib(takeBackMarksLua),
		claimOutcomes:  redis.NewScript(claimOutcomesLua),
		snapshot:       lib(snapshotLua),
		rescheduleIf:   redis.NewScript(rescheduleIfLua),
		budgetReserve:  redis.NewScript(budgetReserveLua),
		budgetSettle:   redis.NewScript(budgetSettleLua),
	}
}
