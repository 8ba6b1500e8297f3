// Package workpool runs slow work (inference, tools) on a bounded number of
// goroutines, so a Kafka handler can hand work off and acknowledge its
// message instead of holding the partition. A full pool blocks Go: that is
// the back-pressure.
//
//	p := workpool.New(64)
//	err := p.Go(ctx, func() { ... })   // blocks while 64 are busy
//	p.Wait()                           // on shutdown
package workpool
