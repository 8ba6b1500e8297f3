package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/bench"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/topics"
)

// retentionMemoryMargin is how far above its starting point Redis's
// used_memory may stay once every ended run has expired and been
// reclaimed: allocator pages and dictionary buckets Redis keeps for a
// while. The 1,000 runs take about 10.5 MB at their peak; about 30-80 KB
// stayed in the runs of this test on redis-server 7.0.
const retentionMemoryMargin = 256 << 10

// TestRetention_a_thousand_ended_runs_leave_redis_as_it_was ends 1,000 runs
// through the pipeline with a retention of 2 s, waits for every one to
// expire, and checks that Redis holds the keys it held before, in about
// the memory, with every global index empty; then that a new run works.
func TestRetention_a_thousand_ended_runs_leave_redis_as_it_was(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 runs")
	}
	// Expiry is Redis's clock: a real redis-server, not miniredis.
	in := infra{brokers: testinfra.Kafka(t), redisURL: testinfra.RedisServer(t)}
	stack := connect(t, in, parseConfig(t, testConfig+"runs: {retention: 2s}\n"))
	workers(t, stack)
	base := serve(t, stack)
	results := followResults(t, stack)
	rdb := stack.Redis
	ctx := context.Background()

	// A first batch loads the scripts and the tool catalog, so the
	// baseline is what a running stepwise holds with no run in it.
	submitAndWait(t, base, results, "warm", 20)
	baseKeys, baseMem := waitDrained(t, rdb)
	t.Logf("baseline: %d keys, used_memory %d B", baseKeys, baseMem)

	const n = 1000
	submitAndWait(t, base, results, "ret", n)
	peakKeys, _ := rdb.DBSize(ctx).Result()
	peakMem := usedMemory(t, rdb)
	t.Logf("after %d runs ended: %d keys, used_memory %d B", n, peakKeys, peakMem)

	keys, mem := waitDrained(t, rdb)
	t.Logf("once expired: %d keys, used_memory %d B (%+d B)", keys, mem, mem-baseMem)
	if keys != baseKeys {
		all, _ := rdb.Keys(ctx, "*").Result()
		t.Errorf("%d keys once every run expired, want the %d of the start: %v", keys, baseKeys, all)
	}
	if mem > baseMem+retentionMemoryMargin {
		t.Errorf("used_memory (less client buffers) %d B once every run expired, want at most %d B + %d B", mem, baseMem, retentionMemoryMargin)
	}

	// New runs keep working, and an expired one is a 404 that says so.
	id := createRun(t, base, "after-"+uuid.NewString(), "assistant", threeSteps)
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 2)
	var body struct {
		Error struct{ Message string } `json:"error"`
	}
	if code := httpGet(t, base+"/v1/runs/ret-0", &body); code != http.StatusNotFound ||
		!strings.Contains(body.Error.Message, "ended more than 2s ago and expired") {
		t.Fatalf("GET an expired run: %d %q", code, body.Error.Message)
	}
}

// submitAndWait creates n runs of threeSteps, prefix-0 to prefix-<n-1>,
// through POST /v1/runs/batch, 100 at a time, and waits for each one's
// RunResult.
func submitAndWait(t *testing.T, base string, results <-chan topics.RunResult, prefix string, n int) {
	t.Helper()
	pending := map[string]bool{}
	for i := 0; i < n; i += 100 {
		var items []map[string]any
		for j := i; j < min(n, i+100); j++ {
			id := fmt.Sprintf("%s-%d", prefix, j)
			items = append(items, map[string]any{"run_id": id, "agent": "assistant", "input": "go", "model": json.RawMessage(threeSteps)})
			pending[id] = true
		}
		if code := httpDo(t, http.MethodPost, base+"/v1/runs/batch", items, nil); code != http.StatusCreated {
			t.Fatalf("batch: status %d", code)
		}
	}
	timeout := time.After(3 * time.Minute)
	for len(pending) > 0 {
		select {
		case r := <-results:
			if pending[r.RunID] && (r.Termination.Reason != "natural_end" || r.Step != 2) {
				t.Fatalf("run %s ended %+v at step %d", r.RunID, r.Termination, r.Step)
			}
			delete(pending, r.RunID)
		case <-timeout:
			t.Fatalf("%d of %d runs did not end", len(pending), n)
		}
	}
}

// followResults follows run-results from the start.
func followResults(t *testing.T, stack *app.Stack) <-chan topics.RunResult {
	t.Helper()
	sub, err := stack.Subscriber("retention-" + uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = sub.Close() })
	msgs, err := sub.Subscribe(ctx, stack.Names.RunResults())
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan topics.RunResult, 4096)
	go func() {
		for m := range msgs {
			if r, err := topics.Decode[topics.RunResult](m.Payload); err == nil {
				out <- r
			}
			m.Ack()
		}
	}()
	return out
}

// waitDrained waits until no run is left in Redis — no run key, every
// global index empty, and every expired key reclaimed (DBSIZE counts an
// expired key until Redis's expiry cycle deletes it; KEYS does not) — and
// returns the key count and used_memory then.
func waitDrained(t *testing.T, rdb redis.UniversalClient) (int64, int64) {
	t.Helper()
	ctx := context.Background()
	var keys int64
	var why string
	testinfra.Eventually(t, 60*time.Second, func() bool {
		all, err := rdb.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range all {
			// A run's keys, and the records of its batch, which are kept
			// twice the retention.
			if strings.HasPrefix(k, "sw:{") || strings.HasPrefix(k, "sw:batch:") {
				why = fmt.Sprintf("keys of runs left, e.g. %s", k)
				return false
			}
		}
		for _, index := range []string{"sw:runs", "sw:active", "sw:retired", "sw:retired:owned", "sw:pending"} {
			if c, _ := rdb.ZCard(ctx, index).Result(); c > 0 {
				why = fmt.Sprintf("%s holds %d runs", index, c)
				return false
			}
		}
		keys, _ = rdb.DBSize(ctx).Result()
		why = fmt.Sprintf("%d expired keys not reclaimed yet", keys-int64(len(all)))
		return keys == int64(len(all))
	}, func() string { return why })
	return keys, usedMemory(t, rdb)
}

// usedMemory is Redis's used_memory less its clients' buffers (the
// connection pools grow with load and keep their connections, which is no
// data left behind), as package bench reads it.
func usedMemory(t testing.TB, rdb redis.UniversalClient) int64 {
	t.Helper()
	st := bench.ReadServerStats(context.Background(), rdb)
	if !st.OK {
		t.Fatal("the Redis does not report its memory (INFO memory)")
	}
	return st.UsedMemory
}

func httpGet(t *testing.T, url string, into any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(into)
	return resp.StatusCode
}
