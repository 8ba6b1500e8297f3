package testinfra

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A server that answers on the port but is not the process started there
// (the port taken between freePort and the bind) is not taken for ours.
func TestWaitReady_takes_only_the_server_it_started(t *testing.T) {
	addr := strings.TrimSuffix(strings.TrimPrefix(RedisServer(t), "redis://"), "/0")
	pid, ok := serverPID(context.Background(), addr)
	if !ok || pid <= 0 {
		t.Fatalf("INFO server of %s: process id %d, %v", addr, pid, ok)
	}
	if !waitReady(addr, pid, 5*time.Second) {
		t.Errorf("the server of process %d at %s is not taken for its own", pid, addr)
	}
	if waitReady(addr, pid+1, 5*time.Second) {
		t.Errorf("the server of process %d at %s is taken for process %d's", pid, addr, pid+1)
	}
}
