package testinfra

import (
	"bytes"
	"sync"
)

// Logs is a log sink that goroutines may write to while a test reads it.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
