package kafka_test

import (
	"os"
	"testing"
)

// TestMain runs the tests, or, when the test binary is re-executed as a
// group member by [startMember], runs that member instead.
func TestMain(m *testing.M) {
	if spec := os.Getenv(envMember); spec != "" {
		os.Exit(runMember(spec))
	}
	os.Exit(m.Run())
}
