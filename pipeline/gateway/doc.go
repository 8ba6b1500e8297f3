// Package gateway is the HTTP API of stepwise: it creates runs (one or a
// batch), publishes their first StepRequested, answers what a run is, says
// and did, streams its event log as Server-Sent Events, lists the tool calls
// waiting for a decision, and publishes decisions and cancels.
//
// The gateway keeps no state of its own. It reads and writes runs through the
// store (Redis is the truth) and publishes to Kafka through any watermill
// publisher, so any number of gateways may run side by side.
//
//	srv, err := gateway.New(gateway.Config{
//		Store:     store.New(rdb),
//		Publisher: kafkaPublisher,
//		Names:     topics.NewNames(""),
//		Agents:    func(name string) bool { _, ok := cfg.Agents[name]; return ok },
//		Logger:    logger,
//	})
//	if err != nil { ... }
//	http.ListenAndServe(":8080", srv.Handler())
//
// Routes (every error is {"error": {"code", "message", "details"?}}):
//
//	POST /v1/runs               create a run            201 {"run_id","status"}; 200 on a replay
//	POST /v1/runs/batch         JSON array or JSON Lines 201 {"run_ids":[...]}
//	GET  /v1/runs               ?status=&agent=&limit=&cursor=
//	GET  /v1/runs/{id}          the run and its tool calls
//	GET  /v1/runs/{id}/messages the conversation
//	GET  /v1/runs/{id}/events   SSE; Last-Event-ID (or ?after=) resumes
//	POST /v1/runs/{id}/decisions resume or cancel a suspended call 202 {"decision_id","run_id","call_id","status"}
//	POST /v1/runs/{id}/cancel   cancel the run          202 {"run_id","decision_id","status"}; 409 when done
//	GET  /v1/pending            ?agent=&tool=&run_id=&limit= suspended calls, oldest first
//	GET  /v1/openapi.json       this API's OpenAPI 3.1 document (contracts/openapi.yaml); no key
//	GET  /healthz, /readyz
//
// Creating a run is idempotent by run_id: the same run_id with the same
// request (agent, input, model, metadata, compared by a hash of their
// canonical JSON) answers 200 with the run's current status and, while
// nobody has picked the run up, publishes its StepRequested again; with a
// different request it answers 409. A publish failure answers 503 with the
// run_id: the run is stored, and sending the same request again finishes
// the job.
//
// Decisions go through Kafka, never straight into Redis: the gateway checks
// the body (every problem at once) and that the run exists, then publishes a
// topics.Decision to the decisions topic keyed by run_id, exactly what an
// external system would publish, and answers 202. It does not judge the
// call: the step worker applies the decision, or rejects it with an event
// in the run's log when the call is finished or resuming, the run is done,
// or its args_hash does not match; a decision for a call that has not parked
// (yet) is held for it and rejected if it never parks. The body is the Kafka decision message; run_id comes from
// the path (a different one in the body is a 400) and decision_id is chosen
// by the gateway when absent. A publish failure answers 503 naming the
// decision_id; sending it again with that id is safe, a repeated decision_id
// being a no-op. A cancel publishes a cancel_run decision (decided_by "api"
// unless the body names someone) for a run that is not done.
//
//	curl -X POST localhost:8080/v1/runs/r-1/decisions -H "Content-Type: application/json" -d '{"call_id": "c-1",
//		"action": "resume", "args_hash": "<from GET /v1/pending>", "decided_by": "alice"}'
//	→ 202 {"decision_id":"9b0e…","run_id":"r-1","call_id":"c-1","status":"accepted"}
package gateway
