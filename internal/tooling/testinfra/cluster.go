package testinfra

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a private Redis Cluster of redis-server processes on random
// ports, started by RedisCluster and stopped when its test ends.
type Cluster struct {
	// URL names every primary in go-redis's cluster URL form
	// (redis://a?addr=b&addr=c), as a user passes it to --redis.
	URL      string
	Nodes    []string // every node's host:port, primaries first
	replicas int      // of each primary
	t        testing.TB
}

// RedisCluster starts primaries × (1 + replicas) redis-servers with
// --cluster-enabled yes, joins them with `redis-cli --cluster create`, and
// waits until every node reports cluster_state:ok. It fails t when
// redis-server or redis-cli is missing, or the cluster does not form.
func RedisCluster(t testing.TB, primaries, replicas int) *Cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err == nil {
		_, err = exec.LookPath("redis-server")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a Redis Cluster needs redis-server and redis-cli, and CI=true: apt-get install -y redis-server redis-tools (%v)", err)
		}
		t.Skipf("a Redis Cluster needs redis-server and redis-cli (apt-get install -y redis-server redis-tools): %v", err)
	}
	n := primaries * (1 + replicas)
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = clusterNode(t)
	}
	args := append([]string{"--cluster", "create"}, nodes...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c := &Cluster{Nodes: nodes, replicas: replicas, t: t}
	c.URL = "redis://" + nodes[0]
	sep := "?"
	for _, addr := range nodes[1:primaries] {
		c.URL += sep + "addr=" + addr
		sep = "&"
	}
	c.WaitHealthy(30 * time.Second)
	return c
}

// Client returns a go-redis cluster client on c, closed when the test ends.
func (c *Cluster) Client() *redis.ClusterClient {
	c.t.Helper()
	opts, err := redis.ParseClusterURL(c.URL)
	if err != nil {
		c.t.Fatalf("parse cluster url %q: %v", c.URL, err)
	}
	rdb := redis.NewClusterClient(opts)
	c.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// WaitHealthy waits until every node says cluster_state:ok, agrees on
// which node serves every slot, and sees every primary's replicas, or
// fails the test after d.
func (c *Cluster) WaitHealthy(d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		problem := c.health()
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("redis cluster not healthy within %s: %s", d, problem)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Failover promotes a replica of the primary that serves key's slot with
// CLUSTER FAILOVER (the coordinated kind: the primary stops taking writes,
// the replica catches up, then takes over), waits for every node to agree,
// and returns the old and the new primary's addresses.
func (c *Cluster) Failover(key string) (from, to string) {
	c.t.Helper()
	ctx := context.Background()
	probe := redis.NewClient(&redis.Options{Addr: c.Nodes[0]})
	defer probe.Close()
	slot, err := probe.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		c.t.Fatalf("cluster keyslot %q: %v", key, err)
	}
	slots, err := probe.ClusterSlots(ctx).Result()
	if err != nil {
		c.t.Fatalf("cluster slots: %v", err)
	}
	for _, s := range slots {
		if int64(s.Start) > slot || int64(s.End) < slot {
			continue
		}
		if len(s.Nodes) < 2 {
			c.t.Fatalf("slot %d of %q has no replica to fail over to", slot, key)
		}
		from, to = s.Nodes[0].Addr, s.Nodes[1].Addr
	}
	if to == "" {
		c.t.Fatalf("no node serves slot %d", slot)
	}
	replica := redis.NewClient(&redis.Options{Addr: to})
	defer replica.Close()
	// A manual failover the replica cannot complete (it may not vote
	// again so soon after an earlier failover of the same slots) is
	// abandoned after 5 s; ask again until it takes.
	deadline := time.Now().Add(60 * time.Second)
	var attempt time.Time
	for ; ; time.Sleep(50 * time.Millisecond) {
		if time.Since(attempt) > 6*time.Second {
			if err := replica.ClusterFailover(ctx).Err(); err != nil {
				c.t.Fatalf("cluster failover at %s: %v", to, err)
			}
			attempt = time.Now()
		}
		role, err := replica.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" && c.health() == "" {
			return from, to
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s did not take over from %s within 60s (role %v, %v; %s)", to, from, role, err, c.health())
		}
	}
}

// health says what is not yet right with the cluster, or "".
func (c *Cluster) health() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var layout string
	for _, addr := range c.Nodes {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		info, err := rdb.ClusterInfo(ctx).Result()
		var slots []redis.ClusterSlot
		if err == nil {
			slots, err = rdb.ClusterSlots(ctx).Result()
		}
		_ = rdb.Close()
		if err != nil {
			return addr + ": " + err.Error()
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return addr + ": cluster_state is not ok"
		}
		for _, sl := range slots {
			if len(sl.Nodes) != 1+c.replicas {
				return fmt.Sprintf("%s: slots %d-%d have %d nodes, want %d", addr, sl.Start, sl.End, len(sl.Nodes), 1+c.replicas)
			}
		}
		view := fmt.Sprint(primariesOf(slots))
		if layout == "" {
			layout = view
		} else if view != layout {
			return addr + " sees the slots served by " + view + ", another node by " + layout
		}
	}
	return ""
}

// primariesOf lists the primary of each slot range, in slot order.
func primariesOf(slots []redis.ClusterSlot) []string {
	out := make([]string, 0, len(slots))
	for _, s := range slots {
		if len(s.Nodes) > 0 {
			out = append(out, fmt.Sprintf("%d-%d@%s", s.Start, s.End, s.Nodes[0].Addr))
		}
	}
	return out
}

// clusterNode starts one cluster-enabled redis-server whose port and bus
// port (port+10000) are both free, and returns its address.
func clusterNode(t testing.TB) string {
	t.Helper()
	return startRedisServer(t, func(port int) bool { return port+10000 <= 65535 && portFree(port+10000) },
		func(port int, dir string) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
				"--cluster-enabled", "yes", "--cluster-config-file", dir + "/nodes.conf", "--cluster-node-timeout", "1000"}
		}, func(addr string, pid int) bool { return waitReady(addr, pid, 5*time.Second) })
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}
