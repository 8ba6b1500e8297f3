package app

import (
	"fmt"
	"os"

	"github.com/google/uuid"
)

// WorkerID names one worker process: its kind, host, pid and a random part,
// so two processes never share leases.
func WorkerID(kind string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("%s-%s-%d-%s", kind, host, os.Getpid(), uuid.NewString()[:8])
}
