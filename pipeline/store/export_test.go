package store

// Caches reports whether the store holds the run's conversation in its
// cache (conversations.go).
func Caches(s *Store, runID string) bool {
	s.conversations.mu.Lock()
	defer s.conversations.mu.Unlock()
	_, ok := s.conversations.runs[runID]
	return ok
}

// DecodeEntry is decodeEntry, for the tests of package store_test that
// read a run's stream entries themselves.
var DecodeEntry = decodeEntry
