package chaos

import "testing"

func TestPartitionOf_places_keys_like_the_Java_client(t *testing.T) {
	// murmur2 values from Kafka's UtilsTest.testMurmur2.
	for key, murmur := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		for _, n := range []int{1, 3, 8, 100} {
			if got, want := partitionOf(key, n), int((murmur&0x7fffffff)%int32(n)); got != want {
				t.Errorf("partitionOf(%q, %d) = %d, want %d", key, n, got, want)
			}
		}
	}
}
