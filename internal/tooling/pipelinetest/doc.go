// Package pipelinetest runs a whole run through the real handlers of the
// step worker and the tool worker, in one goroutine, on a real Redis, with
// the messages on an in-memory bus delivered one at a time, a clock the
// test moves, and a fault injector that makes a worker "crash" at its N-th
// Redis command or publish. It is for proving recovery at every cut point:
//
//	base := pipelinetest.Undisturbed(t, sc)             // the run as it should end
//	for n := 1; ; n++ {
//		got, cut := pipelinetest.Crash(t, sc, pipelinetest.StepWorker, n)
//		if !cut { break }                              // n is past the last operation
//		pipelinetest.Same(t, base, got)                // same history, nothing committed twice
//	}
//
// A crash is what kill -9 leaves: every later command and publish of that
// worker fails, the message it was handling is not acknowledged (Kafka
// delivers it again, to the replacement), what it published before stays
// published, and its leases run out. The replacement is a fresh worker on
// the same store; the clock then moves past the leases and the sweeper runs,
// as in production. It is not a stand-in for Kafka in integration tests:
// those go through the broker (internal/app).
package pipelinetest
