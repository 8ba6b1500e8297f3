package app_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

const quickAnswer = `{"provider":"script","turns":[{"text":"hi"}]}`

// Event streams wait on Redis for new events (a blocking XREAD each). The
// API's commands must not queue behind them for a connection: with more
// streams open than the main client's pool holds connections (go-redis:
// 10 a core), requests are answered without waiting for one.
func TestGateway_open_event_streams_leave_the_API_its_Redis_connections(t *testing.T) {
	// CLIENT LIST tells the waits: a real redis-server.
	in := infra{brokers: testinfra.Kafka(t), redisURL: testinfra.RedisServer(t)}
	stack := connect(t, in, parseConfig(t, testConfig+"gateway: {max_streams_per_key: 1000}\n"))
	base := serve(t, stack) // no workers: the runs stay created, their streams open
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	streams := 10*runtime.GOMAXPROCS(0) + 8
	opened := make(chan error, streams)
	for i := range streams {
		id := createRun(t, base, fmt.Sprintf("watched-%d", i), "assistant", quickAnswer)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/runs/"+id+"/events", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				opened <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				opened <- fmt.Errorf("events of %s: status %d", id, resp.StatusCode)
				return
			}
			opened <- nil
			r := bufio.NewReader(resp.Body)
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
			}
		}()
	}
	for range streams {
		if err := <-opened; err != nil {
			t.Fatal(err)
		}
	}
	opts, err := redis.ParseURL(in.redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	testinfra.Eventually(t, 10*time.Second, func() bool { return blockedReads(t, rdb) >= streams },
		func() string { return fmt.Sprintf("%d of %d streams wait on Redis", blockedReads(t, rdb), streams) })

	before := *stack.Redis.PoolStats()
	for i := range 20 {
		id := createRun(t, base, fmt.Sprintf("asked-%d", i), "assistant", quickAnswer)
		if v := getRun(t, base, id); v.Status != "created" {
			t.Fatalf("run %s is %q, want created", id, v.Status)
		}
	}
	after := *stack.Redis.PoolStats()
	if after.WaitCount != before.WaitCount || after.Timeouts != before.Timeouts {
		t.Fatalf("with %d event streams open, API requests waited %d times for a Redis connection (%d timed out), want 0",
			streams, after.WaitCount-before.WaitCount, after.Timeouts-before.Timeouts)
	}
}

// blockedReads counts the clients of rdb's Redis blocked in an XREAD.
func blockedReads(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	list, err := rdb.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.SplitSeq(list, "\n") {
		if strings.Contains(line, "cmd=xread") && strings.Contains(line, "flags=b") {
			n++
		}
	}
	return n
}
