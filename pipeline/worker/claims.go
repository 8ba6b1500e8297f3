package worker

import (
	"strconv"
	"sync/atomic"
)

// Claims names the claims one worker process takes. Each claim (of a step
// or a tool call) gets an owner of its own, "<worker id>#<n>", so two
// attempts at the same work in one process never share a lease: a commit
// or a renewal by the older attempt is refused once the newer one holds
// the work. Safe for concurrent use.
type Claims struct {
	worker string
	n      atomic.Uint64
}

// NewClaims returns the claim namer of the worker process id.
func NewClaims(id string) *Claims { return &Claims{worker: id} }

// Next returns a lease owner no other claim of this process has used.
func (c *Claims) Next() string {
	return c.worker + "#" + strconv.FormatUint(c.n.Add(1), 10)
}
