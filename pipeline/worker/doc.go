// Package worker holds what the step worker and the tool worker are both
// built from: their dependencies (Deps), with defaults and validation.
//
//	deps := worker.Deps{Store: st, Publisher: pub, Config: cfg, WorkerID: id}
//	w, err := stepworker.New(ctx, deps) // stepworker.Config is worker.Deps
package worker
