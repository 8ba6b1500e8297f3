package embedded

import (
	"time"

	"github.com/alicebob/miniredis/v2"
)

// The bounds of the expirer's period.
const (
	expireMin = 100 * time.Millisecond
	expireMax = 10 * time.Second
)

// expirer ages the embedded Redis's keys with the clock, in the
// background.
//
// miniredis can age them itself (ClockTTL), but it does so on every
// command, and each time it walks every key, sorted: a command took 56 µs
// with no key and 2.7 ms with 10,000 (about a thousand ended runs kept for
// their retention), so a stepwise dev slowed down with every run it kept,
// and its scripts, whose every command paid it, most (ADR 0032). The expirer walks the
// keys once a period instead (FastForward by the time elapsed), the period
// twenty times what the last walk took, within [expireMin, expireMax]: about
// 5 % of a core at most, however many keys there are.
//
// The price is precision, by up to a period: a key goes at the first walk
// after its time to live, and a key written during a period is aged from
// the period's start. The embedded Redis's keys live for days (an ended
// run's retention) or guard work that is safe to do twice (a claim of
// outcomes to publish, a rate limit's lease, which outlives its lease by a
// minute).
type expirer struct {
	m     *miniredis.Miniredis
	chore chore // its stop; its period changes, so it runs its own loop
}

// startExpirer ages m's keys until close.
func startExpirer(m *miniredis.Miniredis) *expirer {
	e := &expirer{m: m, chore: newChore()}
	go e.run()
	return e
}

func (e *expirer) run() {
	defer close(e.chore.stopped)
	period, last := expireMin, time.Now()
	for {
		select {
		case <-e.chore.stop:
			return
		case <-time.After(period):
		}
		now := time.Now()
		e.m.FastForward(now.Sub(last))
		last = now
		period = min(max(20*time.Since(now), expireMin), expireMax)
	}
}

// close stops the expirer and waits for it.
func (e *expirer) close() { e.chore.close() }
