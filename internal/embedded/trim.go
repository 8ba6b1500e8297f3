package embedded

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// DefaultTrimEvery is how often the broker drops the records its readers
// are done with ([WithTrimEvery]).
const DefaultTrimEvery = 5 * time.Second

// segmentBytes is the size at which the broker starts a new segment of a
// partition's log. A segment goes only once every record in it is dropped,
// so it is what a partition that is read as fast as it is written keeps:
// kfake's default, 100 MiB, would keep that much a partition.
const segmentBytes = 256 << 10

// trimmer keeps the broker's log to what is still to be read. Without it
// kfake keeps every record for ever, in memory (or in the data directory):
// a few KB for every agent step, never given back.
//
// Each round it drops, from every partition of a topic that consumer
// groups read, the records all of those groups have committed (as a
// DeleteRecords request to the lowest of their offsets does) but the
// partition's last, and then applies the topics' time retention
// (retention.ms, Kafka's 7 days unless a topic sets its own), which kfake
// applies on its own only to topics that set one (ADR 0031). A group reads a topic when it has committed an offset on one of
// its partitions or a member subscribes to it. A partition one of its
// readers has committed nothing on yet keeps its records: that reader
// starts from the oldest (as stepwise's consumers do) and has read none of
// them. A topic no group reads (run results, decision outcomes and dead
// letters, for readers outside stepwise, or read without a group) keeps its
// records for the time retention.
type trimmer struct {
	cluster *kfake.Cluster
	admin   admin // owned by its chore
	every   time.Duration
	chore   chore
}

func newTrimmer(every time.Duration) *trimmer {
	return &trimmer{
		admin: admin{client: "stepwise-embedded-trimmer"},
		every: every,
		chore: newChore(),
	}
}

// start runs the trimmer on cluster, reached at addr, until close.
func (t *trimmer) start(cluster *kfake.Cluster, addr string) {
	t.cluster, t.admin.addr = cluster, addr
	t.chore.start(t.every, nil, t.trim, t.admin.drop)
}

// close stops the trimmer and waits for it (chore.close).
func (t *trimmer) close() { t.chore.close() }

// trim runs one round; a round that cannot list the groups trims nothing
// (the next tries again).
func (t *trimmer) trim() {
	groups, err := t.admin.groups()
	if err != nil {
		return
	}
	// topic → group reading it → partition → its committed offset
	readers := map[string]map[string]map[int32]int64{}
	reads := func(topic, group string) map[int32]int64 {
		if readers[topic] == nil {
			readers[topic] = map[string]map[int32]int64{}
		}
		if readers[topic][group] == nil {
			readers[topic][group] = map[int32]int64{}
		}
		return readers[topic][group]
	}
	for _, g := range groups {
		info := t.cluster.GroupInfo(g)
		if info == nil {
			continue
		}
		for topic, commits := range info.Commits {
			offsets := reads(topic, g)
			for p, c := range commits {
				offsets[p] = c.Offset
			}
		}
		for _, m := range info.Members {
			for _, topic := range m.SubscribedTopics {
				reads(topic, g)
			}
		}
	}
	for topic, groups := range readers {
		for _, part := range t.cluster.PartitionInfos(topic) {
			to, ok := readTo(groups, part.Partition)
			// The last record stays: a broker restarted on its data
			// directory learns where a partition ends from what it holds,
			// and an empty one would start again at offset 0, under its
			// readers' committed offsets.
			to = min(to, part.HighWatermark-1)
			if ok && to > part.LogStartOffset {
				_ = t.cluster.DeleteRecords(topic, part.Partition, to) // refused only when raced: the next round sees
			}
		}
	}
	t.cluster.ApplyRetention()
}

// readTo is the offset every group reading a topic has read its partition
// p up to: the lowest they committed on it; false when one of them has
// committed nothing on it. groups is never empty (a topic is in readers
// for a group that reads it).
func readTo(groups map[string]map[int32]int64, p int32) (int64, bool) {
	low := int64(math.MaxInt64)
	for _, offsets := range groups {
		off, ok := offsets[p]
		if !ok {
			return 0, false
		}
		low = min(low, off)
	}
	return low, true
}
