package chaos

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a private redis-server on a fixed port with an append-only
// file fsynced on every write (appendfsync always): a kill -9 loses no write
// Redis acknowledged, so a restart from the AOF brings back every committed
// transition, and what the harness tests is stepwise, not Redis's
// durability window. RDB snapshots are off (save ""), so the AOF is the
// only copy.
type redisServer struct {
	proc *process
	addr string
}

func newRedisServer(dir string, logf func(string, ...any)) (*redisServer, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("the chaos harness needs redis-server on PATH (Debian: apt-get install redis-server): %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "redis")
	if err := mkdir(data); err != nil {
		return nil, err
	}
	r := &redisServer{addr: "127.0.0.1:" + strconv.Itoa(port)}
	r.proc = &process{
		name: "redis-server",
		path: path,
		args: []string{
			"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--appendonly", "yes", "--appendfsync", "always", "--save", "",
			"--dir", data, "--protected-mode", "no",
		},
		logPath:   filepath.Join(dir, "logs", "redis-server.log"),
		supervise: true,
		logf:      logf,
	}
	return r, nil
}

// URL is what the programs get as STEPWISE_REDIS_URL.
func (r *redisServer) URL() string { return "redis://" + r.addr + "/0" }

// start starts redis-server and waits until it answers PING (after a
// restart: until it has loaded its AOF).
func (r *redisServer) start(ctx context.Context) error {
	if err := r.proc.start(); err != nil {
		return err
	}
	return r.waitReady(ctx, 30*time.Second)
}

func (r *redisServer) waitReady(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: r.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	for {
		if err := c.Ping(ctx).Err(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis-server at %s did not answer PING within %s (log: %s)", r.addr, within, r.proc.logPath)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// freePort asks the kernel for a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
