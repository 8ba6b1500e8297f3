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
//   - waits up to the settle time (default 120 s) for every run to end.
//
// The oracle, for every run: it ended; its history (GET /v1/runs/{id} less
// the timestamps, and GET /v1/runs/{id}/messages) equals its script's
// reference with the run's own id aside; its event log holds every commit
// event (run.created, run.started, message.assistant, tool_call.created,
// tool_call.finished, step.ended, run.finished) exactly once per run, step
// or call; run-results holds at least one RunResult for it, all equal and
// saying what the run says. The [Report] has the figures: runs, kills,
// restarts, duplicates, done, stuck, wrong, double commits, and the seconds
// from the end of the churn to the last run done.
//
// The harness is a test behind the build tag chaos, and `make chaos`:
//
//	go test -tags chaos -run TestChaos -count=1 -v -timeout 30m ./internal/chaos/
//	STEPWISE_CHAOS_RUNS=200 STEPWISE_CHAOS_CHURN=30s make chaos
//
// The knobs are the STEPWISE_CHAOS_* variables of [ConfigFromEnv]; the
// method and the figures measured are in docs/reliability.md. The package
// imports nothing of stepwise: it talks to the programs only through their
// HTTP API, Kafka and Redis, like any outside client, so it builds while
// the pipeline is being changed.
package chaos
