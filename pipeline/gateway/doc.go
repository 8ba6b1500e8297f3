// Package gateway is the HTTP API of stepwise: it creates runs (one or a
// batch), publishes their first StepRequested, answers what a run is, says
// and did, and streams its event log as Server-Sent Events.
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
//	GET  /healthz, /readyz
//
// Creating a run is idempotent by run_id: the same run_id with the same
// request (agent, input, model, metadata, compared by a hash of their
// canonical JSON) answers 200 with the run's current status and, while
// nobody has picked the run up, publishes its StepRequested again; with a
// different request it answers 409. A publish failure answers 503 with the
// run_id: the run is stored, and sending the same request again finishes
// the job.
package gateway
