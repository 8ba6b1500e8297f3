// Package lease keeps a claim alive while slow work runs: it calls a renew
// function every third of the lease period until told to stop, and gives up
// (calling onLost once) when the renew says the lease is gone.
//
//	stop := lease.Keep(ctx, 30*time.Second, renew, func() { log.Warn("lease lost") })
//	defer stop()
package lease
