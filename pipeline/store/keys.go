package store

import (
	"fmt"
	"strconv"
	"strings"
)

// Key layout. Every key of one run carries the hash tag {run_id}, so the
// per-run scripts touch a single Redis Cluster slot. The indexes are global
// and are only ever written by commands of their own, never inside a
// per-run script (a pipeline sends them beside the script when they go
// together; on a cluster it splits by node). ADR 0009.
//
//	<p>:{<run>}:run            HASH   the run record (codec.go)
//	<p>:{<run>}:msgs           LIST   message JSON, append-only
//	<p>:{<run>}:call:<call_id> HASH   one tool call record (codec.go)
//	<p>:{<run>}:step:<n>       LIST   call ids of step n, in index order
//	<p>:{<run>}:events         STREAM field "e" = pipeline.Event JSON without ID
//	<p>:{<run>}:state          HASH   persistent plugin state, key → JSON (state.go)
//	<p>:{<run>}:decisions      SET    ids of decisions applied or rejected (held ones are not)
//	<p>:{<run>}:outcomes       STREAM what became of each decision, until published
//	                                  (outcomes.go)
//	<p>:{<run>}:held           HASH   call id → the decision held for it, JSON with
//	                                  decision_id first and hold_until_ms (decision.go)
//	<p>:runs                   ZSET   run ids scored by created-at (unix ms)
//	<p>:active                 ZSET   run ids scored by when the sweeper looks next
//	<p>:retired                ZSET   ended runs whose result is published, scored by
//	                                  when their keys expire (unix ms; retention.go)
//	<p>:pending                ZSET   "{<run>}<call>" of suspended calls, scored by
//	                                  parked-at (unix ms); maintained after the scripts
//	<p>:thread:{<thread>}      STRING the latest turn of a chat thread with a run, a
//	                                  hint (thread.go)
//	<p>:batch:{<batch>}        STRING the run ids of a batch, JSON (batch.go)
//	<p>:alive                  ZSET   step worker instances scored by their last
//	                                  heartbeat (unix ms; alive.go)
//	<p>:schedule:{<schedule>}  HASH   a schedule's record (schedules.go)
//	<p>:schedules              ZSET   schedule ids scored by when the sweepers look
//	                                  at them next (unix ms; paused: +inf)
//	<p>:agentver:<hash>        STRING an agent version's definition, JSON, written
//	                                  once (versions.go; package versions)

func (s *Store) runKey(runID string) string    { return s.prefix + ":{" + runID + "}:run" }
func (s *Store) msgsKey(runID string) string   { return s.prefix + ":{" + runID + "}:msgs" }
func (s *Store) eventsKey(runID string) string { return s.prefix + ":{" + runID + "}:events" }

func (s *Store) callKey(runID, callID string) string {
	return s.prefix + ":{" + runID + "}:call:" + callID
}

func (s *Store) stepKey(runID string, step int) string {
	return s.prefix + ":{" + runID + "}:step:" + strconv.Itoa(step)
}

func (s *Store) decisionsKey(runID string) string { return s.prefix + ":{" + runID + "}:decisions" }
func (s *Store) heldKey(runID string) string      { return s.prefix + ":{" + runID + "}:held" }

func (s *Store) runsKey() string    { return s.prefix + ":runs" }
func (s *Store) activeKey() string  { return s.prefix + ":active" }
func (s *Store) pendingKey() string { return s.prefix + ":pending" }
func (s *Store) aliveKey() string   { return s.prefix + ":alive" }

func (s *Store) agentVersionKey(hash string) string { return s.prefix + ":agentver:" + hash }

func (s *Store) scheduleKey(id string) string { return s.prefix + ":schedule:{" + id + "}" }
func (s *Store) schedulesKey() string         { return s.prefix + ":schedules" }

// liveKey is the index of the runs that have not ended and been retired,
// scored as the run index is; liveIndexedKey marks the runs created before
// there was one as added to it (list.go).
func (s *Store) liveKey() string        { return s.prefix + ":live" }
func (s *Store) liveIndexedKey() string { return s.prefix + ":live:indexed" }

// tenantRunsKey is the run index of one tenant's runs, for a tenant that has
// one (tenantIndexed); tenantsKey is the set of the tenants that have one;
// tenantRunsIndexedKey marks the runs created before there were such
// indexes as added to them (list.go).
func (s *Store) tenantRunsKey(tenant string) string { return s.prefix + ":runs:t:" + tenant }
func (s *Store) tenantsKey() string                 { return s.prefix + ":tenants" }
func (s *Store) tenantRunsIndexedKey() string       { return s.prefix + ":runs:tenants" }

// tenantPendingKey is the pending index of the calls of one tenant's runs,
// for a tenant that has one (tenantIndexed); tenantsIndexedKey marks the
// calls parked before there were such indexes as added to them (pending.go).
func (s *Store) tenantPendingKey(tenant string) string { return s.prefix + ":pending:t:" + tenant }
func (s *Store) tenantsIndexedKey() string             { return s.prefix + ":pending:tenants" }

// pendingMember is a call's member of the pending index: "{<run>}<call>".
// A run id holds no brace, so the first "}" ends it.
func pendingMember(runID, callID string) string { return "{" + runID + "}" + callID }

// parsePendingMember splits a member of the pending index.
func parsePendingMember(m string) (runID, callID string, ok bool) {
	rest, ok := strings.CutPrefix(m, "{")
	if !ok {
		return "", "", false
	}
	runID, callID, ok = strings.Cut(rest, "}")
	return runID, callID, ok && runID != "" && callID != ""
}

// checkRunID refuses ids that would break the hash tag: an empty id, or one
// with a brace, could spread a run's keys over several cluster slots.
func checkRunID(runID string) error {
	if runID == "" || strings.ContainsAny(runID, "{}") {
		return fmt.Errorf("%w: run id %q must be non-empty and free of braces", ErrInvalid, runID)
	}
	return nil
}

// checkCallID refuses empty call ids.
func checkCallID(callID string) error {
	if callID == "" {
		return fmt.Errorf("%w: empty call id", ErrInvalid)
	}
	return nil
}
