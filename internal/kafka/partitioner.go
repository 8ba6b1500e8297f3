package kafka

import (
	"math/rand/v2"

	"github.com/IBM/sarama"
)

// NewPartitioner returns a Sarama partitioner that places keyed messages the
// way the Java client's default partitioner does: murmur2 of the key, sign
// bit cleared, modulo the partition count. A message without a key goes to a
// random partition. Sarama's own default hashes with FNV-1a, so without this
// a run's messages from Sarama and from kcat, Java or franz-go producers
// would land on different partitions.
//
// It matches sarama.PartitionerConstructor; the topic is not used. The
// partitioner is safe for concurrent use.
func NewPartitioner(topic string) sarama.Partitioner { return murmur2Partitioner{} }

type murmur2Partitioner struct{}

var _ sarama.Partitioner = murmur2Partitioner{}

// Partition implements sarama.Partitioner.
func (murmur2Partitioner) Partition(msg *sarama.ProducerMessage, numPartitions int32) (int32, error) {
	if msg.Key == nil {
		return rand.Int32N(numPartitions), nil
	}
	key, err := msg.Key.Encode()
	if err != nil {
		return -1, err
	}
	return PartitionOf(key, numPartitions), nil
}

// PartitionOf is the partition of n that a record with this key lands on:
// murmur2 of the key, sign bit cleared, modulo n.
func PartitionOf(key []byte, n int32) int32 {
	return int32(murmur2(key)&0x7fffffff) % n
}

// RequiresConsistency implements sarama.Partitioner: a key always maps to the
// same partition, so Sarama must not move it when that partition is down.
func (murmur2Partitioner) RequiresConsistency() bool { return true }

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
