package app

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// resp2 is the protocol the programs speak to Redis unless the URL says
// otherwise (?protocol=3): stepwise uses no RESP3 feature, and go-redis
// checks every RESP3 connection it takes from its pool for push
// notifications, about 5 % of a worker's CPU under load.
const resp2 = 2

// connectRedis connects to what url names: one Redis server, or a Redis
// Cluster. A URL with addr= parameters is a cluster, in go-redis's cluster
// URL form (redis://host1:port?addr=host2:port&addr=host3:port); the URL of
// a single node is asked whether it is part of a cluster (INFO), so
// the address of any one node of a cluster works as well.
func connectRedis(ctx context.Context, url string, sec RedisSecurity) (redis.UniversalClient, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return nil, fmt.Errorf("redis URL does not parse: %w", err)
	}
	shown := u.Redacted() // the URL without its password, for messages
	if u.Query().Has("addr") {
		return connectCluster(ctx, shown, u, sec)
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis URL %s: %w", shown, err)
	}
	if err := sec.apply(&opts.TLSConfig, &opts.Username, &opts.Password); err != nil {
		return nil, err
	}
	if !u.Query().Has("protocol") {
		opts.Protocol = resp2
	}
	db := opts.DB
	opts.DB = 0 // a cluster node refuses SELECT: ask it what it is first
	rdb := redis.NewClient(opts)
	info, err := rdb.Info(ctx).Result() // every section: miniredis knows no "cluster"
	if err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis at %s is unreachable: %w", opts.Addr, err)
	}
	if strings.Contains(info, "cluster_enabled:1") {
		_ = rdb.Close()
		return connectCluster(ctx, shown, u, sec)
	}
	if db == 0 {
		return rdb, nil
	}
	_ = rdb.Close()
	opts.DB = db
	rdb = redis.NewClient(opts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis at %s, database %d: %w", opts.Addr, db, err)
	}
	return rdb, nil
}

// connectCluster connects a cluster client and checks that the cluster
// serves every slot. shown is the URL without its password.
func connectCluster(ctx context.Context, shown string, u *neturl.URL, sec RedisSecurity) (redis.UniversalClient, error) {
	if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
		return nil, fmt.Errorf("redis URL %s: a Redis Cluster has only database 0, not %s", shown, db)
	}
	u.Path = ""
	opts, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("redis cluster URL %s: %w", shown, err)
	}
	if err := sec.apply(&opts.TLSConfig, &opts.Username, &opts.Password); err != nil {
		return nil, err
	}
	if !u.Query().Has("protocol") {
		opts.Protocol = resp2
	}
	rdb := redis.NewClusterClient(opts)
	info, err := rdb.ClusterInfo(ctx).Result()
	var refused redis.Error
	if errors.As(err, &refused) { // it answered: cluster support disabled
		_ = rdb.Close()
		return nil, fmt.Errorf("redis at %s is not a Redis Cluster (%w): drop the addr= parameters to use one server", strings.Join(opts.Addrs, ","), err)
	}
	if err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis cluster at %s is unreachable: %w", strings.Join(opts.Addrs, ","), err)
	}
	if !strings.Contains(info, "cluster_state:ok") {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis cluster at %s is not ready: cluster_state is not ok (are all slots assigned?)", strings.Join(opts.Addrs, ","))
	}
	return rdb, nil
}

// waitPoolSize bounds the connections a program holds for event waits: the
// event streams (SSE, the AI SDK and AG-UI streams) of one gateway that can
// wait on Redis at once. Connections open as streams need them; a stream
// beyond it waits for one.
const waitPoolSize = 1024

// waitClient is a client on rdb's Redis, with its own pool, for the reads
// that block until a run's events arrive (store.WithWaitClient). It opens no
// connection until a read needs one, so a worker, which never waits on
// events, costs nothing. nil for a client of another kind (connectRedis
// makes none): the store then waits on rdb.
func waitClient(rdb redis.UniversalClient) redis.UniversalClient {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		o := *c.Options()
		o.PoolSize = waitPoolSize
		return redis.NewClusterClient(&o)
	case *redis.Client:
		o := *c.Options()
		o.PoolSize = waitPoolSize
		return redis.NewClient(&o)
	}
	return nil
}
