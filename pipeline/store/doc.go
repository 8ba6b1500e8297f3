// Package store keeps every run's truth in Redis: the run record, its
// append-only conversation, one record per tool call, and an event log (a
// Redis stream) appended in the same atomic operation as each transition.
//
// All keys of a run share the hash tag {run_id} (layout in keys.go), so every
// per-run Lua script works on Redis Cluster; the global indexes (runs by
// creation time, the live ones, runs due for the sweeper, suspended calls
// awaiting a decision, and a named tenant's runs and calls: indexes.go) are
// written by commands of their own.
//
// Suspended calls: CommitStep records the state ToolGate decided per call
// (suspended with its parking, or terminal), FinishCall parks a call whose
// tool returned pending, SetWaiting moves the run to waiting once only
// suspended and terminal calls are left, ApplyDecision applies, holds or
// rejects a decision (a repeated decision id is a duplicate), and
// ListPending lists what awaits a decision. CancelRun ends a run from
// outside, cancelling its unfinished calls.
//
// Recovery: Snapshot reads what a reconcile needs (the run, its current
// step's calls, its held decisions, its sweep time); the outbox marks
// (MarkRequested, MarkDispatched, and MarkPublished for results) record
// which of the messages a state asks for are on Kafka; RescheduleWaiting
// moves a waiting run's sweep time only if nobody moved it since it was
// read, and indexes its parked calls again; the Release methods give up a
// lease at once.
//
// Every state change is one script that checks the state it expects
// (status, step, step state, lease owner) before writing; when the
// expectation no longer holds it changes nothing, appends no event and
// returns an error wrapping ErrStale (or ErrLeaseHeld, ErrLeaseLost,
// ErrConflict, ErrNotFound), which is how duplicate and reordered messages
// become no-ops. Callers pass the clock: each operation takes `now`.
//
// A script takes one JSON argument, read by name (Store.call), and sets
// only what Go computed: the states from pipeline's tables (tables.go), the
// events as entries of plain fields (entry.go; what they keep in a call or
// the conversation is named by their ref, refs.go). All Lua is in scripts/,
// each script loaded behind lib.lua (scripts.go). The scripts run the same
// on Redis 7 and on miniredis, and the contract tests run on both.
//
// What one step writes is in three files and the scripts they name:
// step.go (claim_step, commit_step), call.go (claim_call, finish_call) and
// endstep.go (end_step, set_waiting).
//
//	st := store.New(redisClient)                    // keys under "sw:"
//	run, created, err := st.CreateRun(ctx, run, input, now)
//	run, err = st.ClaimStep(ctx, run.ID, 0, store.Lease{Owner: "w1", Until: now.Add(time.Minute)}, now)
//	if errors.Is(err, store.ErrLeaseHeld) { /* someone else is on it: ack and move on */ }
//	run, calls, err := st.CommitStep(ctx, run.ID, 0, "w1", commit, now)
//	evs, err := st.WaitEvents(ctx, run.ID, lastEventID, 10*time.Second)
package store
