package bench

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// RoundTrips is a go-redis hook that counts the client's round trips to
// Redis: one per command sent alone (blocking XREADs excluded: they wait,
// they are not work), one per pipeline.
type RoundTrips struct{ n atomic.Int64 }

// Count is the round trips so far.
func (c *RoundTrips) Count() int64 { return c.n.Load() }

// Reset sets the count to zero.
func (c *RoundTrips) Reset() { c.n.Store(0) }

func (c *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "xread" {
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
type Publishes struct {
	message.Publisher
	n atomic.Int64
}

// Publish counts and publishes.
func (c *Publishes) Publish(topic string, msgs ...*message.Message) error {
	c.n.Add(1)
	return c.Publisher.Publish(topic, msgs...)
}

// Count is the publishes so far.
func (c *Publishes) Count() int64 { return c.n.Load() }

// Reset sets the count to zero.
func (c *Publishes) Reset() { c.n.Store(0) }

// ServerStats are what redis-server says of its own work: commands
// executed (scripts' included, from INFO commandstats), CPU seconds (INFO
// cpu) and memory in use (INFO memory). OK is false when the server does
// not say (miniredis).
type ServerStats struct {
	Commands   int64
	CPU        float64
	UsedMemory int64 // bytes (INFO memory)
	OK         bool
}

// ReadServerStats reads them.
func ReadServerStats(ctx context.Context, rdb redis.UniversalClient) ServerStats {
	var st ServerStats
	cmds, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil || !strings.Contains(cmds, "cmdstat_") {
		return st
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
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				st.UsedMemory, _ = strconv.ParseInt(v, 10, 64)
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
	st.OK = true
	return st
}
