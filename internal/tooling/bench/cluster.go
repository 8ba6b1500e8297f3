package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisCluster is a private Redis Cluster of primaries only (no replicas:
// the bench measures, it does not fail over), for Options.RedisPrimaries.
type redisCluster struct {
	nodes []*redisServer
	url   string // go-redis's cluster URL form, as --redis takes it
}

// startRedisCluster starts n redis-servers with --cluster-enabled, joins
// them with `redis-cli --cluster create` and waits until the cluster says
// it is ok; an error when redis-server or redis-cli is not installed.
func startRedisCluster(ctx context.Context, n int) (*redisCluster, error) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("a Redis Cluster needs redis-cli (apt-get install -y redis-tools): %w", err)
	}
	c := &redisCluster{}
	var addrs []string
	for range n {
		srv, err := startRedisServer(ctx, true)
		if err != nil {
			c.close()
			return nil, err
		}
		c.nodes = append(c.nodes, srv)
		addrs = append(addrs, srv.addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	if out, err := exec.CommandContext(ctx, cli, append(args, "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput(); err != nil {
		c.close()
		return nil, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	c.url = "redis://" + addrs[0]
	for i, a := range addrs[1:] {
		c.url += map[bool]string{true: "?", false: "&"}[i == 0] + "addr=" + a
	}
	if err := c.waitOK(ctx); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// waitOK waits, for at most 30 s, until every node says cluster_state:ok.
func (c *redisCluster) waitOK(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, srv := range c.nodes {
		rdb := redis.NewClient(&redis.Options{Addr: srv.addr})
		for {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				_ = rdb.Close()
				return errors.New("the Redis Cluster did not say cluster_state:ok within 30s")
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = rdb.Close()
	}
	return nil
}

func (c *redisCluster) close() {
	for _, srv := range c.nodes {
		srv.close()
	}
}
