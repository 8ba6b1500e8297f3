package worker

import (
	"context"
	"sync"
	"time"
)

// Pool runs slow work (inference, tools) on at most Size goroutines, so a
// Kafka handler can hand work off and acknowledge its message instead of
// holding the partition. A handler takes a slot before it claims the work:
// a full pool blocks Take, which is the back-pressure, and a claim is never
// held while it waits for a slot (its lease could run out meanwhile). It is
// safe for concurrent use.
//
// The goroutines that run the work outlive it: one that finishes waits up
// to runnerIdle for the next, so the pool does not pay for a new goroutine,
// and for growing its stack again, at every call (the work goes deep into
// the Redis and Kafka clients; the copying was a tenth of a busy tool
// worker's CPU).
type Pool struct {
	slots chan struct{}
	work  chan func() // unbuffered: taken by a runner that is idle
	wg    sync.WaitGroup
}

// runnerIdle is how long a runner with nothing to do waits for work
// before it ends.
const runnerIdle = 5 * time.Second

// NewPool returns a pool of size slots (at least 1).
func NewPool(size int) *Pool {
	if size < 1 {
		size = 1
	}
	return &Pool{slots: make(chan struct{}, size), work: make(chan func())}
}

// Slot is one place on the pool, taken by Take. Run work on it with Go, or
// give it back unused with Release.
type Slot struct {
	p    *Pool
	once sync.Once
}

// Take waits for a free slot. It returns ctx's error if ctx ends first.
func (p *Pool) Take(ctx context.Context) (*Slot, error) {
	select {
	case p.slots <- struct{}{}:
		return &Slot{p: p}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TryTake takes up to n slots that are free now, without waiting, and
// returns them as one Reserve.
func (p *Pool) TryTake(n int) Reserve {
	r := Reserve{p: p}
	for ; r.n < n; r.n++ {
		select {
		case p.slots <- struct{}{}:
		default:
			return r
		}
	}
	return r
}

// Reserve is slots taken at once by TryTake, held as a count: Slot hands
// them out one at a time, Release gives back those not handed out.
type Reserve struct {
	p *Pool
	n int
}

// Len is the number of slots the reserve still holds.
func (r *Reserve) Len() int { return r.n }

// Slot hands out one of the reserve's slots; the reserve must hold one.
func (r *Reserve) Slot() *Slot {
	if r.n == 0 {
		panic("worker: Slot of an empty Reserve")
	}
	r.n--
	return &Slot{p: r.p}
}

// Release gives back the slots the reserve still holds.
func (r *Reserve) Release() {
	for ; r.n > 0; r.n-- {
		<-r.p.slots
	}
}

// Go runs fn on the slot, in a goroutine that is idle or a new one; the
// slot is free again when fn returns.
func (s *Slot) Go(fn func()) {
	s.p.wg.Add(1)
	task := func() {
		defer s.p.wg.Done()
		defer s.Release()
		fn()
	}
	hand(s.p.work, task)
}

// hand runs task on a goroutine idle on work, or on a new one that then
// stays for more (runner).
func hand(work chan func(), task func()) {
	select {
	case work <- task:
	default:
		go runner(work, task)
	}
}

// runner runs task, then the tasks handed to it on work while it waits,
// until it has waited runnerIdle for one.
func runner(work <-chan func(), task func()) {
	idle := time.NewTimer(runnerIdle)
	defer idle.Stop()
	for {
		task()
		idle.Reset(runnerIdle)
		select {
		case task = <-work:
		case <-idle.C:
			return
		}
	}
}

// Release gives the slot back. Calling it again does nothing.
func (s *Slot) Release() { s.once.Do(func() { <-s.p.slots }) }

// Busy is the number of slots in use.
func (p *Pool) Busy() int { return len(p.slots) }

// Size is the number of slots.
func (p *Pool) Size() int { return cap(p.slots) }

// Wait blocks until every function started with Slot.Go has returned.
func (p *Pool) Wait() { p.wg.Wait() }

// Drain waits up to grace for the work on p to return, then calls abandon
// (which cancels the work's context) and waits for the rest. A grace of 0
// abandons at once.
func Drain(p *Pool, grace time.Duration, abandon func()) {
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	abandon()
	<-done
}
