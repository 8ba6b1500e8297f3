package bench

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// RoundTrips is a go-redis hook that counts the client's round trips to
// Redis: one per command sent alone (blocking XREADs excluded: they wait,
// they are not work; so are the bench's own INFO reads), one per pipeline.
type RoundTrips struct{ n atomic.Int64 }

// Count is the round trips so far.
func (c *RoundTrips) Count() int64 { return c.n.Load() }

// Reset sets the count to zero.
func (c *RoundTrips) Reset() { c.n.Store(0) }

func (c *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "xread" && name != "info" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// Publishes wraps a publisher and counts its publishes: each is one
// synchronous produce request (a batch when it carries several messages).
// It also notes when each publish to the topic it watches (Watch) began.
type Publishes struct {
	message.Publisher
	n atomic.Int64

	mu    sync.Mutex
	watch string
	times []time.Time
}

// Publish counts and publishes.
func (c *Publishes) Publish(topic string, msgs ...*message.Message) error {
	c.n.Add(1)
	c.mu.Lock()
	if topic == c.watch {
		c.times = append(c.times, time.Now())
	}
	c.mu.Unlock()
	return c.Publisher.Publish(topic, msgs...)
}

// Watch starts noting the publishes to topic, forgetting those noted
// before; "" stops.
func (c *Publishes) Watch(topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch, c.times = topic, nil
}

// Watched returns when each publish to the watched topic began, in order.
func (c *Publishes) Watched() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.times)
}

// Count is the publishes so far.
func (c *Publishes) Count() int64 { return c.n.Load() }

// Reset sets the count to zero.
func (c *Publishes) Reset() { c.n.Store(0) }

// ServerStats are what Redis says of its own work: commands executed
// (scripts' included, from INFO commandstats), CPU seconds (INFO cpu) and
// memory in use (INFO memory), summed over a cluster's primaries, with
// each primary's CPU apart (the busiest one bounds the throughput). OK is
// false when the server does not say (miniredis).
type ServerStats struct {
	Commands   int64
	CPU        float64
	UsedMemory int64              // bytes of data: INFO memory's used_memory less its clients' buffers (mem_clients_normal)
	NodeCPU    map[string]float64 // CPU seconds by primary's address
	OK         bool
}

// ReadServerStats reads them from the one server, or from every primary of
// a cluster.
func ReadServerStats(ctx context.Context, rdb redis.UniversalClient) ServerStats {
	st := ServerStats{NodeCPU: map[string]float64{}, OK: true}
	var mu sync.Mutex
	read := func(ctx context.Context, node *redis.Client) error {
		n, ok := readNodeStats(ctx, node)
		mu.Lock()
		defer mu.Unlock()
		st.OK = st.OK && ok
		st.Commands += n.Commands
		st.CPU += n.CPU
		st.UsedMemory += n.UsedMemory
		st.NodeCPU[node.Options().Addr] = n.CPU
		return nil
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		if err := c.ForEachMaster(ctx, read); err != nil {
			return ServerStats{}
		}
	case *redis.Client:
		_ = read(ctx, c)
	default:
		return ServerStats{}
	}
	return st
}

// readNodeStats reads one server's INFO; false when it does not say.
func readNodeStats(ctx context.Context, rdb *redis.Client) (ServerStats, bool) {
	var st ServerStats
	cmds, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil || !strings.Contains(cmds, "cmdstat_") {
		return st, false
	}
	for _, line := range strings.Split(cmds, "\r\n") {
		if _, stats, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(line, "cmdstat_") {
			calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			st.Commands += n
		}
	}
	if mem, err := rdb.Info(ctx, "memory").Result(); err == nil {
		for _, line := range strings.Split(mem, "\r\n") {
			k, v, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "used_memory":
				st.UsedMemory += n
			case "mem_clients_normal": // the connections' buffers: what the clients send and read, not what Redis holds
				st.UsedMemory -= n
			}
		}
	}
	if cpu, err := rdb.Info(ctx, "cpu").Result(); err == nil {
		for _, line := range strings.Split(cpu, "\r\n") {
			k, v, _ := strings.Cut(line, ":")
			if k == "used_cpu_sys" || k == "used_cpu_user" {
				f, _ := strconv.ParseFloat(v, 64)
				st.CPU += f
			}
		}
	}
	return st, true
}
