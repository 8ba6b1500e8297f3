package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// clusterConfig is testConfig's assistant with a tool that asks for
// approval.
const clusterConfig = `
kafka: {partitions: 4}
stepworker: {lease: 1s, sweep_interval: 100ms, dispatch_timeout: 3s, max_attempts: 3}
toolworker: {lease: 1s, default_timeout: 10s}
agents:
  assistant:
    model: {provider: script, turns: [{text: "hi"}]}
    tools: [echo, sleep, refund]
tools:
  refund: {executor: {builtin: echo}, permission: ask}
`

// The pipeline on a Redis Cluster of three primaries, given to the
// programs as a cluster URL: 100 runs of three steps, a run parked and
// decided through GET /v1/pending, and every run's keys and index entries
// gone once the retention passed (the indexes live in other slots than
// the runs).
func TestCluster_runs_decisions_and_retention_work_on_a_three_node_cluster(t *testing.T) {
	cluster := testinfra.RedisCluster(t, 3, 0)
	stack := connect(t, infra{brokers: testinfra.Kafka(t), redisURL: cluster.URL}, parseConfig(t, clusterConfig+"runs: {retention: 2s}\n"))
	if _, ok := stack.Redis.(*redis.ClusterClient); !ok {
		t.Fatalf("a cluster URL gave a %T, want a cluster client", stack.Redis)
	}
	workers(t, stack)
	base := serve(t, stack)

	submitAndWait(t, base, followResults(t, stack), "c", 100)

	id := createRun(t, base, "c-refund", "assistant", script(call("R", "refund", `{"amount":5}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	var pending struct {
		Pending []struct {
			RunID  string `json:"run_id"`
			CallID string `json:"call_id"`
		} `json:"pending"`
	}
	if code := httpGet(t, base+"/v1/pending", &pending); code != http.StatusOK || len(pending.Pending) != 1 || pending.Pending[0].RunID != id {
		t.Fatalf("GET /v1/pending: %d %+v", code, pending)
	}
	decide(t, base, id, map[string]any{"decision_id": "d-r", "call_id": "R", "action": "resume"})
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)

	waitClusterDrained(t, stack.Redis.(*redis.ClusterClient))
}

// A run parked for approval and runs in flight survive CLUSTER FAILOVERs
// of the primaries serving them and the global indexes, one after another
// (some slots twice, back to the old primary): go-redis follows the MOVED replies to
// the promoted replicas, the scripts are loaded there again, and what a
// handler could not do while a primary stepped down is redelivered.
func TestCluster_runs_survive_failovers_of_the_primaries_that_serve_them(t *testing.T) {
	cluster := testinfra.RedisCluster(t, 3, 1)
	stack := connect(t, infra{brokers: testinfra.Kafka(t), redisURL: cluster.URL}, parseConfig(t, clusterConfig))
	workers(t, stack)
	base := serve(t, stack)

	parked := createRun(t, base, "f-refund", "assistant", script(call("R", "refund", `{"amount":5}`)))
	waitFor(t, base, parked, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })

	// Before each failover, runs whose steps sleep, so some are mid-flight
	// while each primary steps down.
	var ids []string
	for i, key := range []string{"sw:{" + parked + "}:run", "sw:{f-0}:run", "sw:{f-5}:run", "sw:{f-10}:run", "sw:runs", "sw:active"} {
		for j := range 5 {
			ids = append(ids, createRun(t, base, fmt.Sprintf("f-%d", 5*i+j), "assistant",
				script(call("S", "sleep", `{"ms":400}`), call("E", "echo", `{"i":1}`))))
		}
		from, to := cluster.Failover(key)
		t.Logf("failed over %s (serving %s) to %s", from, key, to)
	}

	decide(t, base, parked, map[string]any{"decision_id": "d-r", "call_id": "R", "action": "resume"})
	for _, id := range append(ids, parked) {
		assertNaturalEnd(t, waitDone(t, base, id, 60*time.Second), 1)
	}
}

// waitClusterDrained waits until no master of the cluster holds a key of a
// run and every global index is empty.
func waitClusterDrained(t *testing.T, rdb *redis.ClusterClient) {
	t.Helper()
	ctx := context.Background()
	var why string
	testinfra.Eventually(t, 60*time.Second, func() bool {
		var mu sync.Mutex
		why = ""
		err := rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			keys, err := node.Keys(ctx, "sw:{*").Result()
			if err == nil && len(keys) > 0 {
				mu.Lock()
				why = fmt.Sprintf("%s holds %d keys of runs, e.g. %s", node.Options().Addr, len(keys), keys[0])
				mu.Unlock()
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, index := range []string{"sw:runs", "sw:active", "sw:retired", "sw:retired:owned", "sw:pending"} {
			if c, _ := rdb.ZCard(ctx, index).Result(); c > 0 {
				why = strings.TrimSpace(why + fmt.Sprintf(" %s holds %d runs", index, c))
			}
		}
		return why == ""
	}, func() string { return why })
}

// What --redis takes: a cluster URL, or the URL of any one node of a
// cluster; and what it refuses, with a message that says why.
func TestCluster_the_redis_url_names_a_cluster_or_one_of_its_nodes(t *testing.T) {
	cluster := testinfra.RedisCluster(t, 3, 0)
	brokers := testinfra.Kafka(t)
	connectTo := func(url string) (*app.Stack, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		stack, err := app.Connect(ctx, app.Options{Config: parseConfig(t, testConfig), Kafka: brokers[0], Redis: url, Logger: testLogger()})
		if err == nil {
			t.Cleanup(func() { _ = stack.Close() })
		}
		return stack, err
	}
	for _, url := range []string{cluster.URL, "redis://" + cluster.Nodes[2], "redis://" + cluster.Nodes[1] + "/0"} {
		stack, err := connectTo(url)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		if _, ok := stack.Redis.(*redis.ClusterClient); !ok {
			t.Errorf("%s gave a %T, want a cluster client", url, stack.Redis)
		}
	}
	single := testinfra.RedisServer(t)
	if stack, err := connectTo(strings.TrimSuffix(single, "/0") + "/5"); err != nil {
		t.Errorf("one server, database 5: %v", err)
	} else if c, ok := stack.Redis.(*redis.Client); !ok || c.Options().DB != 5 {
		t.Errorf("one server, database 5: a %T", stack.Redis)
	}
	for url, want := range map[string]string{
		"redis://" + cluster.Nodes[0] + "/3": "a Redis Cluster has only database 0, not 3",
		strings.TrimSuffix(single, "/0") + "?addr=" + strings.TrimPrefix(strings.TrimSuffix(single, "/0"), "redis://"): "is not a Redis Cluster",
	} {
		if _, err := connectTo(url); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to say %q", url, err, want)
		}
	}
}
