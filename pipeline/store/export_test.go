package store

// DecodeStoredEvent is decodeStored, for the tests of package store_test
// that read a run's stream entries themselves.
var DecodeStoredEvent = decodeStored

// FreeLanes is how many of s's lanes to Redis are free (coalesce.go).
func FreeLanes(s *Store) int {
	s.co.mu.Lock()
	defer s.co.mu.Unlock()
	return s.co.free
}
