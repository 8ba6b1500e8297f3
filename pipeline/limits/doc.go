// Package limits is the flow control every worker shares: per model, a cap
// on inferences in flight, a rate of inferences per minute, tokens per
// minute, and a tenant's share of the cap, all kept in Redis so that any
// number of step workers together stay under a provider's limits as one
// would. A provider's 429 with Retry-After cools the model down for every
// worker.
//
// A holder that is refused a slot waits in the model's queue; a release
// hands the freed slot's turn to the oldest waiter (the caller wakes it).
// Slots are leases: a holder that dies frees its slot when the lease ends.
// ADR 0015.
package limits
