package kafka_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/kafka"
)

func TestSubscribers_of_one_group_share_the_partitions(t *testing.T) {
	t.Parallel()
	in := unique(t, "in")
	s := newStack(t, 4, in)
	group := unique(t, "group")

	members := [2]*recorder{{}, {}}
	for i, rec := range members {
		r := s.router(t, kafka.RouterConfig{})
		r.AddConsumerHandler(fmt.Sprint("member-", i), in, s.subscriber(t, group), func(msg *message.Message) error {
			rec.add(msg)
			return nil
		})
		run(t, r)
	}

	// Until both members have joined, one may hold every partition: keep
	// publishing until each has handled something.
	i := 0
	eventually(t, 10*time.Second, "both members handle messages", func() bool {
		s.publish(t, in, fmt.Sprint("warm-", i), "warm-up")
		i++
		return members[0].len() > 0 && members[1].len() > 0
	})

	// With the group settled, each partition belongs to one member.
	before := [2]int{members[0].len(), members[1].len()}
	const n = 40
	for i := range n {
		s.publish(t, in, fmt.Sprint("run-", i), "settled")
	}
	handled := func() (total int) {
		for i, rec := range members {
			for _, m := range rec.all()[before[i]:] {
				if m.payload == "settled" {
					total++
				}
			}
		}
		return total
	}
	eventually(t, 10*time.Second, "all settled messages handled", func() bool { return handled() == n })

	owner := map[int32]int{}
	for i, rec := range members {
		got := 0
		for _, m := range rec.all()[before[i]:] {
			if m.payload != "settled" {
				continue
			}
			got++
			if o, ok := owner[m.partition]; ok && o != i {
				t.Errorf("partition %d handled by members %d and %d", m.partition, o, i)
			}
			owner[m.partition] = i
		}
		if got == 0 {
			t.Errorf("member %d handled none of the settled messages", i)
		}
	}
}
