// Package worker holds what the step worker and the tool worker are both
// built from: their dependencies (Deps), with defaults and validation; the
// bounded pool slow work runs on (Pool: take a slot, then claim); the lease
// keeper that renews a claim while the work runs (KeepLease); the names
// of claims (Claims: one lease owner per claim); the watch that stops the
// executions whose work a cancel called off elsewhere (Watch); and Warm,
// which runs a Kafka handler on a goroutine that outlives its message.
//
//	router.AddNoPublisherHandler("step", topic, sub, worker.Warm(w.HandleStep))
//
//	deps := worker.Deps{Store: st, Publisher: pub, Config: cfg, WorkerID: id}
//	w, err := stepworker.New(ctx, deps) // stepworker.Config is worker.Deps
//
//	slot, err := pool.Take(msg.Context()) // before claiming
//	owner := claims.Next()
//	// claim with owner; on refusal slot.Release(), else:
//	slot.Go(func() {
//		stop := worker.KeepLease(ctx, period, renew, isLost, onLost)
//		defer stop()
//		// work, then commit as owner
//	})
//
//	watch := worker.NewWatch(worker.WatchTick, check) // check: which keys were called off
//	go watch.Run(ctx, logErr)
//	ctx, over := watch.Start(ctx, key) // around each execution
//	defer over()
package worker
