package chaos

import "github.com/stepwise-run/stepwise/internal/kafka"

// partitionOf returns the partition of n that a record keyed runID lands
// on, as stepwise's producers place it (-1 for no partitions). Stuck runs
// that share partitions point at a consumer stopped on them.
func partitionOf(runID string, n int) int {
	if n <= 0 {
		return -1
	}
	return int(kafka.PartitionOf([]byte(runID), int32(n)))
}
