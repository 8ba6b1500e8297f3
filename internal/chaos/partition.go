package chaos

// partitionOf returns the partition of n that a record keyed runID lands
// on: murmur2 of the key, sign bit cleared, modulo n, as the Java client's
// default partitioner and stepwise's producers place it. Stuck runs that
// share partitions point at a consumer stopped on them.
func partitionOf(runID string, n int) int {
	if n <= 0 {
		return -1
	}
	return int(murmur2([]byte(runID))&0x7fffffff) % n
}

// murmur2 is Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2).
func murmur2(b []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for len(b) >= 4 {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		b = b[4:]
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
