//go:build race

package store

// raceEnabled: the race detector is on, and a sync.Pool drops what it is
// given at random (on purpose), so a pooled thing is sometimes made anew.
const raceEnabled = true
