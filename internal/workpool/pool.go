package workpool

import (
	"context"
	"sync"
)

// Pool runs functions on at most Size goroutines at once. It is safe for
// concurrent use.
type Pool struct {
	slots chan struct{}
	wg    sync.WaitGroup
}

// New returns a pool of size slots (at least 1).
func New(size int) *Pool {
	if size < 1 {
		size = 1
	}
	return &Pool{slots: make(chan struct{}, size)}
}

// Go runs fn on a free slot, waiting for one while all are busy. It returns
// ctx's error, without running fn, if ctx ends first.
func (p *Pool) Go(ctx context.Context, fn func()) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.wg.Add(1)
	go func() {
		defer func() {
			<-p.slots
			p.wg.Done()
		}()
		fn()
	}()
	return nil
}

// Busy is the number of slots in use.
func (p *Pool) Busy() int { return len(p.slots) }

// Size is the number of slots.
func (p *Pool) Size() int { return cap(p.slots) }

// Wait blocks until every function started by Go has returned.
func (p *Pool) Wait() { p.wg.Wait() }
