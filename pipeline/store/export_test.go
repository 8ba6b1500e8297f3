package store

// DecodeStoredEvent is decodeStored, for the tests of package store_test
// that read a run's stream entries themselves.
var DecodeStoredEvent = decodeStored
