package chaos

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"
)

// Restart delays: a killed worker stays down 0.2–0.6 s; redis-server stays
// down 0.5–1.5 s, long enough that every worker sees its connections fail.
const (
	workerDownMin = 200 * time.Millisecond
	workerDownMax = 600 * time.Millisecond
	redisDownMin  = 500 * time.Millisecond
	redisDownMax  = 1500 * time.Millisecond
)

// batcherKillEvery is, in KillEvery, the mean time between two kills of
// the step worker holding the batcher while a job is in flight.
const batcherKillEvery = 3

// batcherRetry is how soon the churn looks again for a batcher holding a
// job in flight when it found none.
const batcherRetry = 250 * time.Millisecond

// churnCounts are the faults the churn injected.
type churnCounts struct {
	kills, restarts           int
	batcherKills              int // of those kills, the step worker holding the batcher with a job in flight
	redisKills, redisRestarts int
	redisDown                 time.Duration // from the kill until PING answered again
	stops                     []stopWindow  // each worker kill, from the signal to the exit
	errors                    []string
}

// churn kills a random running worker with SIGKILL every killEvery
// (jittered ±50%; never, when killEvery ≤ 0) and restarts it after
// workerDownMin–workerDownMax; unless holder is nil, kills the same way,
// about every batcherKillEvery × killEvery, the step worker holder names
// (the one holding the batcher while a job is in flight), as soon as
// there is one; and, unless redisAt < 0, kills redis-server once at
// redisAt and restarts it from its AOF. It returns when d has passed, or
// ctx ends, with every process it killed running again.
func churn(ctx context.Context, s *stack, rng *rand.Rand, d, killEvery, redisAt time.Duration, holder func() string) churnCounts {
	var c churnCounts
	start := time.Now()
	end := start.Add(d)
	nextKill, nextBatcherKill := time.Time{}, time.Time{}
	if killEvery > 0 {
		nextKill = start.Add(jitter(rng, killEvery))
		if holder != nil {
			nextBatcherKill = start.Add(jitter(rng, batcherKillEvery*killEvery))
		}
	}
	redisDone := redisAt < 0
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
	for {
		now := time.Now()
		if now.After(end) || ctx.Err() != nil {
			return c
		}
		next := end
		if !nextKill.IsZero() && nextKill.Before(next) {
			next = nextKill
		}
		if !nextBatcherKill.IsZero() && nextBatcherKill.Before(next) {
			next = nextBatcherKill
		}
		if !redisDone && start.Add(redisAt).Before(next) {
			next = start.Add(redisAt)
		}
		select {
		case <-ctx.Done():
			return c
		case <-time.After(time.Until(next)):
		}
		now = time.Now()
		switch {
		case !redisDone && !now.Before(start.Add(redisAt)):
			redisDone = true
			s.logf("churn: kill -9 redis-server")
			killedAt := time.Now()
			if s.redis.proc.kill() {
				c.redisKills++
			}
			sleep(ctx, between(redisDownMin, redisDownMax))
			if err := s.redis.start(context.WithoutCancel(ctx)); err != nil {
				c.errors = append(c.errors, "restart redis-server: "+err.Error())
				s.logf("churn: restart redis-server: %v", err)
				continue
			}
			c.redisRestarts++
			c.redisDown = time.Since(killedAt)
			s.logf("churn: redis-server back from its AOF after %s", c.redisDown.Round(time.Millisecond))
		case !nextBatcherKill.IsZero() && !now.Before(nextBatcherKill):
			name := holder()
			i := slices.IndexFunc(s.stepWorkers, func(p *process) bool { return p.name == name })
			if i < 0 {
				nextBatcherKill = now.Add(batcherRetry)
				continue
			}
			nextBatcherKill = now.Add(jitter(rng, batcherKillEvery*killEvery))
			if c.bounce(ctx, s, s.stepWorkers[i], between(workerDownMin, workerDownMax), "holding the batcher with a job in flight") {
				c.batcherKills++
			}
		case !nextKill.IsZero() && !now.Before(nextKill):
			nextKill = now.Add(jitter(rng, killEvery))
			var up []*process
			for _, p := range s.workers() {
				if p.running() {
					up = append(up, p)
				}
			}
			if len(up) == 0 {
				continue
			}
			c.bounce(ctx, s, up[rng.IntN(len(up))], between(workerDownMin, workerDownMax), "")
		}
	}
}

// bounce kills p with SIGKILL (why, when set, says what p was doing),
// keeps it down for down, and starts it again, counting both. It reports
// whether p was running to be killed.
func (c *churnCounts) bounce(ctx context.Context, s *stack, p *process, down time.Duration, why string) bool {
	killedAt := time.Now()
	if !p.kill() {
		return false
	}
	c.kills++
	c.stops = append(c.stops, stopWindow{worker: p.name, program: p.program, from: killedAt, to: time.Now()})
	if why != "" {
		why = " (" + why + ")"
	}
	s.logf("churn: kill -9 %s%s, restart in %s", p.name, why, down.Round(time.Millisecond))
	sleep(ctx, down)
	if err := p.start(); err != nil {
		if !p.running() { // not restarted by its supervisor meanwhile either
			c.errors = append(c.errors, err.Error())
			s.logf("churn: %v", err)
		}
		return true
	}
	c.restarts++
	return true
}

// jitter returns d ± 50%, at random.
func jitter(rng *rand.Rand, d time.Duration) time.Duration {
	return d/2 + time.Duration(rng.Int64N(int64(d)+1))
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
