// Package chaos is stepwise's chaos harness: it runs stepwise as separate
// OS processes, breaks them while runs are in flight, and checks that no
// run noticed.
//
// One experiment ([Run]):
//
//   - builds the programs once (go build of cmd/stepwise, gateway,
//     stepworker, toolworker) and starts them: the embedded Kafka-protocol
//     broker of `stepwise infra` on a free port, a private redis-server with
//     an append-only file fsynced on every write, one gateway, two step
//     workers and two tool workers, with short leases and a large retry
//     budget ([DefaultWorkerYAML]);
//   - runs each script variant once, undisturbed: the reference;
//   - submits N runs (default 1000) through POST /v1/runs/batch, spread over
//     the churn, each with its own script model: 3 steps of 2–3 parallel
//     echo and sleep calls, then a final answer;
//   - for the churn (default 60 s) kills a random step or tool worker with
//     SIGKILL every ~2 s and restarts it 0.2–0.6 s later, kills redis-server
//     once with SIGKILL and restarts it from its AOF, and publishes again a
//     fraction of the records of every topic (the duplicator);
//   - in the kill churn, a fifth of the scripts compose: their runs call
//     an agent tool (a child run per call, some in parallel) and hand
//     themselves to another agent; the runs of two scripts are forked
//     once done; two schedules (every 1 s allow_all, every 2 s skip) fire
//     during the churn (composeScript, forkRuns, tickSchedule);
//   - in the kill churn, a fifth of the runs are in batch mode on a fake
//     OpenAI Batch API the harness serves (batchAPI), and the step worker
//     holding the batcher is killed while a batch is in flight;
//   - waits up to the settle time (default 120 s) for every run to end:
//     those submitted, the forks, the runs of the schedules, the children.
//
// With Rolling (STEPWISE_CHAOS_ROLLING=true, `make chaos-rolling`), the
// experiment tests graceful shutdown instead: the churn kills nothing, and,
// Rounds times (default 2), restarts every step and tool worker one after
// another as a rolling deploy does: SIGTERM, a wait for the exit (bounded by
// the worker's shutdown_grace + 10 s, then SIGKILL: a failure), the
// replacement started and waited for until its log says that its handlers
// run, plus 1 s. The configuration sets shutdown_grace to 3 s
// ([RollingWorkerYAML]), and a third of the sleep calls and a sixth of the
// inferences last 0.5–1.7 × the grace, so some work finishes within the
// grace and some is abandoned and handed over. The Redis kill and the
// duplicator are off unless asked for.
//
// The oracle, for every run: it ended; its history (GET /v1/runs/{id} less
// the timestamps, and GET /v1/runs/{id}/messages) equals its script's
// reference with the run's own id aside; its event log holds every commit
// event (run.created, run.started, message.assistant, tool_call.created,
// tool_call.finished, step.ended, run.finished) exactly once per run, step
// or call; run-results holds at least one RunResult for it, all equal and
// saying what the run says. Children, forks and runs of a schedule are
// judged the same way, each against its own reference (see member); a
// parent's agent-tool calls each have one child, whose answer is the
// call's result; a fork's history up to its fork point is its original's;
// no child, fork or scheduled run logged run.created or run.started
// twice; each tick of the allow_all schedule fired exactly once
// (countTicks). In rolling mode also: its longest pause (the
// longest stretch in which it logged no event and none of its scripted work
// could still be running, see longestPause) is at most the shutdown grace +
// the sweep interval + 2 s. The [Report] has the figures: runs, kills or
// restarts, duplicates, done, stuck, wrong, double commits, double starts,
// the schedules' ticks (expected, fired, doubled, missed), the seconds
// from the end of the churn to the last run done, and the pauses (p50, p99,
// max) and handovers in every mode.
//
// The harness is a test behind the build tag chaos, and `make chaos`:
//
//	go test -tags chaos -run TestChaos -count=1 -v -timeout 30m ./internal/tooling/chaos/
//	STEPWISE_CHAOS_RUNS=200 STEPWISE_CHAOS_CHURN=30s make chaos
//	make chaos-rolling CHAOS_ROLLING_RUNS=200   # STEPWISE_CHAOS_ROLLING=true
//
// The knobs are the STEPWISE_CHAOS_* variables of [ConfigFromEnv]; the
// method and the figures measured are in docs/reliability.md. It talks to
// the programs only through their HTTP API, Kafka and Redis, like any
// outside client; of stepwise it imports only internal/kafka's partitioner,
// to name the partition a stuck run is on.
package chaos
