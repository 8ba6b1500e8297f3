package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a private redis-server the bench starts when it is given
// no Redis and one is installed: the embedded miniredis is far slower than
// the real thing and reports no server-side counts.
type redisServer struct {
	cmd  *exec.Cmd
	dir  string
	addr string // host:port
	url  string
}

// startRedisServer starts redis-server on a free loopback port, keeping
// nothing on disk; a node of a Redis Cluster when cluster is set (its bus
// on the port 10000 above, free too). An error when it is not installed
// or does not answer.
func startRedisServer(ctx context.Context, cluster bool) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	port, err := freePort(cluster)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "stepwise-bench-redis-")
	if err != nil {
		return nil, err
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--loglevel", "warning"}
	if cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
	}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s := &redisServer{cmd: cmd, dir: dir, addr: addr, url: "redis://" + addr + "/0"}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if rdb.Ping(ctx).Err() == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.close()
			return nil, errors.New("redis-server did not answer within 5s")
		}
	}
}

// freePort is a free loopback port; with bus, one whose port 10000 above
// is free too, as a cluster node's bus takes it.
func freePort(bus bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !bus {
			return port, nil
		}
		if port+10000 <= 65535 {
			if b, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000)); err == nil {
				_ = b.Close()
				return port, nil
			}
		}
	}
	return 0, errors.New("no free port with a free cluster bus port 10000 above it")
}

func (s *redisServer) close() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}
