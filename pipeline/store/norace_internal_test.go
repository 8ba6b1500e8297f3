//go:build !race

package store

// raceEnabled: see race_internal_test.go.
const raceEnabled = false
