package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/kafkacluster"
)

// clusterNodes is the size of the real cluster: three, so that one node
// down leaves two in-sync replicas of every partition and publishing with
// acks=all goes on.
const clusterNodes = 3

// A killed broker stays down 2–5 s: long enough that clients see its
// connections fail and its partitions' leadership move, short enough that
// a second broker is never down with it.
const (
	brokerDownMin = 2 * time.Second
	brokerDownMax = 5 * time.Second
)

// startCluster starts a real Apache Kafka cluster in the work directory
// (fetched from Maven Central on the machine's first run).
func (s *stack) startCluster(ctx context.Context) error {
	c, err := kafkacluster.Up(ctx, kafkacluster.Options{
		Dir: filepath.Join(s.dir, "kafka"), Nodes: clusterNodes, Log: logfWriter(s.logf),
	})
	if err != nil {
		return fmt.Errorf("start Apache Kafka: %w", err)
	}
	s.cluster = c
	s.brokers = strings.Split(c.Brokers(), ",")
	return nil
}

// brokerCounts are the broker faults the churn injected.
type brokerCounts struct {
	kills, restarts int
	moves           int           // clean restarts, which move leadership away and back
	longestDown     time.Duration // of a killed broker, from the kill until it answered again
	errors          []string
}

// churnBrokers kills a random broker of the real cluster with SIGKILL
// every killEvery (jittered ±50%) and starts it again on its data after
// brokerDownMin–brokerDownMax, and once, at moveAt, restarts a broker
// cleanly (SIGTERM: it hands its partitions' leadership to the others
// before it exits). One broker is down at a time. It returns when d has
// passed, or ctx ends, with every broker running again.
func churnBrokers(ctx context.Context, s *stack, rng *rand.Rand, d, killEvery, moveAt time.Duration) brokerCounts {
	var c brokerCounts
	start := time.Now()
	end := start.Add(d)
	moved := false
	nextKill := start.Add(jitter(rng, killEvery))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
	restart := func(id int) bool {
		if err := s.cluster.Start(context.WithoutCancel(ctx), id); err != nil {
			c.errors = append(c.errors, fmt.Sprintf("start broker %d: %v", id, err))
			s.logf("churn: start broker %d: %v", id, err)
			return false
		}
		return true
	}
	for {
		next := end
		if nextKill.Before(next) {
			next = nextKill
		}
		if !moved && start.Add(moveAt).Before(next) {
			next = start.Add(moveAt)
		}
		select {
		case <-ctx.Done():
			return c
		case <-time.After(time.Until(next)):
		}
		if time.Now().After(end) {
			return c
		}
		id := 1 + rng.IntN(len(s.cluster.Nodes))
		if !moved && !time.Now().Before(start.Add(moveAt)) {
			moved = true
			s.logf("churn: restart broker %d cleanly (its leadership moves)", id)
			if err := s.cluster.Stop(id); err != nil {
				c.errors = append(c.errors, fmt.Sprintf("stop broker %d: %v", id, err))
				continue
			}
			if restart(id) {
				c.moves++
			}
			continue
		}
		nextKill = time.Now().Add(jitter(rng, killEvery))
		killedAt := time.Now()
		if err := s.cluster.Kill(id); err != nil {
			c.errors = append(c.errors, fmt.Sprintf("kill broker %d: %v", id, err))
			continue
		}
		c.kills++
		down := between(brokerDownMin, brokerDownMax)
		s.logf("churn: kill -9 broker %d, restart in %s", id, down.Round(time.Millisecond))
		sleep(ctx, down)
		if restart(id) {
			c.restarts++
			c.longestDown = max(c.longestDown, time.Since(killedAt))
		}
	}
}

// logfWriter sends what is written to it, line by line, to logf.
type logfWriter func(string, ...any)

func (f logfWriter) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(strings.TrimRight(string(p), "\n"), "\n") {
		f("%s", line)
	}
	return len(p), nil
}
