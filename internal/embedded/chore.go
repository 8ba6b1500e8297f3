package embedded

import "time"

// chore is the goroutine of one of the embedded parts' housekeepers (the
// broker's reaper and trimmer, which start it; the Redis's expirer, which
// runs a loop of its own on its stop): it does its round every period, and
// at once when woken, until closed.
type chore struct {
	stop    chan struct{}
	stopped chan struct{}
}

func newChore() chore {
	return chore{stop: make(chan struct{}), stopped: make(chan struct{})}
}

// start runs round every period, and whenever wake delivers (nil: never),
// on a goroutine of its own; once closed, it runs last and is done.
func (c chore) start(period time.Duration, wake <-chan struct{}, round, last func()) {
	go func() {
		defer close(c.stopped)
		defer last()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-wake:
			case <-tick.C:
			}
			round()
		}
	}()
}

// close stops the chore and waits for it. It must come before the
// cluster's Close: kfake's in-process calls block for ever on a closed
// cluster.
func (c chore) close() {
	close(c.stop)
	<-c.stopped
}
