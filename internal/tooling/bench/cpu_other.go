//go:build !unix

package bench

import "time"

// processCPU says nothing where getrusage is not available.
func processCPU() (time.Duration, bool) { return 0, false }
