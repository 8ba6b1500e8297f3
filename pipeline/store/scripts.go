package store

import (
	"embed"

	"github.com/redis/go-redis/v9"
)

// The Lua of the store: one file a script in scripts/, one per operation,
// and their library, lib.lua. A script takes one JSON argument (Store.call)
// and checks the state Go expects before it writes what Go computed; times
// come from Go, so the scripts behave the same on Redis 7 and on
// miniredis.
//
//go:embed scripts/*.lua
var scriptFiles embed.FS

// libLua is the library a script starts with: of it, the functions the
// script calls (libsplit.go), as a script cannot include another and Redis
// makes a closure of each function in front of a script on every call.
// With the whole library in front of every script a step cost Redis 4 µs
// more (about 4 %: 102.5–103.3 µs against 97.7–99.1 a step with one call,
// its commit, claim, finish, fan-in read and end, two runs each,
// 2026-11-28).
var libLua = source("lib")

// source is the Lua of scripts/<name>.lua.
func source(name string) string {
	src, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic("store: no script " + name) // the names below are the files'
	}
	return string(src)
}

type scripts struct {
	createRun, claimStep, renewStepLease, deferStep, appendDelta, commitStep, endStep *redis.Script
	finishRun                                                                         *redis.Script
	claimCall, renewCallLease, finishCall                                             *redis.Script
	setWaiting, cancelRun, applyDecision, dropHeld                                    *redis.Script
	listRuns, dueRuns, markSent, takeBackMarks, rescheduleIf, claimOutcomes, snapshot *redis.Script
	outcomesSent                                                                      *redis.Script
	budgetReserve, budgetSettle                                                       *redis.Script
	admitRun, growBatch                                                               *redis.Script
	putSchedule, keepState                                                            *redis.Script
	commitRunEnd                                                                      *redis.Script
	upgradeRun                                                                        *redis.Script
	inference                                                                         inferenceScripts // inferencejobs.go
}

// loadScripts prepares the scripts, each the same way: the constants
// lib.lua reads (consts, retention.go), then what the script calls of
// lib.lua, then the script.
func loadScripts(consts string) scripts {
	load := func(name string) *redis.Script {
		src := source(name)
		return redis.NewScript(consts + libFor()(src) + src)
	}
	return scripts{
		createRun:      load("create_run"),
		claimStep:      load("claim_step"),
		renewStepLease: load("renew_step_lease"),
		deferStep:      load("defer_step"),
		appendDelta:    load("append_delta"),
		commitStep:     load("commit_step"),
		endStep:        load("end_step"),
		finishRun:      load("finish_run"),
		commitRunEnd:   load("commit_run_end"),
		claimCall:      load("claim_call"),
		renewCallLease: load("renew_call_lease"),
		finishCall:     load("finish_call"),
		setWaiting:     load("set_waiting"),
		cancelRun:      load("cancel_run"),
		applyDecision:  load("apply_decision"),
		dropHeld:       load("drop_held"),
		listRuns:       load("list_runs"),
		dueRuns:        load("due_runs"),
		markSent:       load("mark_sent"),
		takeBackMarks:  load("take_back_marks"),
		claimOutcomes:  load("claim_outcomes"),
		outcomesSent:   load("outcomes_sent"),
		snapshot:       load("snapshot"),
		rescheduleIf:   load("reschedule_if"),
		budgetReserve:  load("budget_reserve"),
		budgetSettle:   load("budget_settle"),
		admitRun:       load("admit_run"),
		growBatch:      load("grow_batch"),
		putSchedule:    load("put_schedule"),
		keepState:      load("keep_state"),
		upgradeRun:     load("upgrade_run"),
		inference:      loadInferenceScripts(load),
	}
}
