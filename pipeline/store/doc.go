// Package store keeps every run's truth in Redis: the run record, its
// append-only conversation, one record per tool call, and an event log (a
// Redis stream) appended in the same atomic operation as each transition.
//
// All keys of a run share the hash tag {run_id}, so every per-run Lua script
// works on Redis Cluster. Every state change checks the state it expects
// (status, step, step state, lease owner) before writing; when the
// expectation no longer holds it returns an error wrapping ErrStale and
// changes nothing, which is how duplicate and reordered messages become
// no-ops.
//
//	st := store.New(redisClient)
//	run, created, err := st.CreateRun(ctx, run, input, time.Now())
//	run, err = st.ClaimStep(ctx, run.ID, 0, store.Lease{Owner: "w1", Until: deadline}, time.Now())
package store
