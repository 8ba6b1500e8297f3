package kafka_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

// churn says how a churn test kills and restarts its members.
type churn struct {
	members    int
	partitions int32
	// duration is how long members are killed and restarted.
	duration time.Duration
	// every and restart bound the random pause before the next kill and
	// between a kill and the restart.
	every, restart [2]time.Duration
	// deadline bounds the wait, once the churn stops, for every message.
	deadline time.Duration
	// env adds environment variables to a member slot's processes.
	env func(slot int) []string
}

// TestGroup_consumes_everything_soon_after_members_stop_being_killed runs
// consumer-group members as separate processes, kills one with SIGKILL
// every 0.5–2s and restarts it 0.2–0.6s later, while messages keep coming,
// then stops the churn and waits for every message. Before ADR 0006 the
// group often never recovered on the embedded broker; now it does within
// a second or so (the log says how long), and the deadline is generous.
func TestGroup_consumes_everything_soon_after_members_stop_being_killed(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts member processes for ~25s")
	}
	c := churn{
		members:    4,
		partitions: 8,
		duration:   10 * time.Second,
		every:      [2]time.Duration{500 * time.Millisecond, 2 * time.Second},
		restart:    [2]time.Duration{200 * time.Millisecond, 600 * time.Millisecond},
		deadline:   20 * time.Second,
	}
	t.Run("dynamic members", func(t *testing.T) { runChurn(t, c) })
	t.Run("static members", func(t *testing.T) {
		c := c
		c.env = func(slot int) []string {
			return []string{fmt.Sprintf("%s=member-%d", kafka.EnvInstanceID, slot)}
		}
		runChurn(t, c)
	})
}

func runChurn(t *testing.T, c churn) {
	brokers := testinfra.Kafka(t)
	topic := unique(t, "churn")
	ensure(t, brokers, c.partitions, topic)
	group := unique(t, "group")
	pub, err := kafka.NewPublisher(kafka.Plain(brokers...), wlog)
	if err != nil {
		t.Fatalf("NewPublisher: %v", err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	s := stack{brokers: brokers, pub: pub}

	seen := newSeenSet()
	ms := newMembers(t, memberSpec{Brokers: brokers, Group: group, Topic: topic}, seen, c.env)
	for slot := range c.members {
		ms.start(slot)
	}

	var (
		mu        sync.Mutex
		published []string
	)
	publish := func(id string) {
		s.publish(t, topic, id, id) // the id is the run id too: it picks the partition
		mu.Lock()
		published = append(published, id)
		mu.Unlock()
	}

	// Messages keep arriving while members die and come back.
	stopPublishing := make(chan struct{})
	publishing := make(chan struct{})
	go func() {
		defer close(publishing)
		for i := 0; ; i++ {
			select {
			case <-stopPublishing:
				return
			case <-time.After(20 * time.Millisecond):
			}
			publish(fmt.Sprint("during-", i))
		}
	}()

	seed := uint64(time.Now().UnixNano())
	rnd := rand.New(rand.NewPCG(seed, seed>>1))
	between := func(b [2]time.Duration) time.Duration {
		return b[0] + time.Duration(rnd.Int64N(int64(b[1]-b[0])+1))
	}
	kills := 0
	churnEnd := time.Now().Add(c.duration)
	for time.Now().Before(churnEnd) {
		time.Sleep(between(c.every))
		slot := rnd.IntN(c.members)
		ms.kill(slot)
		kills++
		pause := between(c.restart)
		t.Logf("%s killed member %d, restart in %v", time.Now().Format("15:04:05.000"), slot, pause.Round(time.Millisecond))
		time.Sleep(pause)
		ms.start(slot)
	}
	stopped := time.Now()
	t.Logf("%s churn stopped", stopped.Format("15:04:05.000"))
	close(stopPublishing)
	<-publishing
	for i := range 100 {
		publish(fmt.Sprint("after-", i))
	}
	mu.Lock()
	ids := published
	mu.Unlock()
	t.Logf("seed %d: %d kills in %v; %d messages published", seed, kills, c.duration, len(ids))

	deadline := stopped.Add(c.deadline)
	lastReport := time.Now()
	for {
		missing := seen.missing(ids)
		if len(missing) == 0 {
			t.Logf("every message consumed %.1fs after the churn stopped", time.Since(stopped).Seconds())
			return
		}
		if time.Since(lastReport) >= time.Second {
			lastReport = time.Now()
			t.Logf("%4.1fs after the churn: %d of %d messages not consumed; group %s",
				time.Since(stopped).Seconds(), len(missing), len(ids), describeGroup(brokers, group))
		}
		if time.Now().After(deadline) {
			ms.logErrors()
			t.Fatalf("%v after the churn stopped, %d of %d messages still not consumed (e.g. %s)",
				c.deadline, len(missing), len(ids), strings.Join(missing[:min(5, len(missing))], ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// describeGroup returns the group's state and member count, for logs.
func describeGroup(brokers []string, group string) string {
	admin, err := sarama.NewClusterAdmin(brokers, kafka.SaramaConfig())
	if err != nil {
		return err.Error()
	}
	defer admin.Close()
	ds, err := admin.DescribeConsumerGroups([]string{group})
	if err != nil || len(ds) == 0 {
		return fmt.Sprint("not described: ", err)
	}
	return fmt.Sprintf("%s with %d members", ds[0].State, len(ds[0].Members))
}
