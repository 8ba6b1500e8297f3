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
	cmd *exec.Cmd
	dir string
	url string
}

// startRedisServer starts redis-server on a free loopback port, keeping
// nothing on disk; an error when it is not installed or does not answer.
func startRedisServer(ctx context.Context) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir, err := os.MkdirTemp("", "stepwise-bench-redis-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s := &redisServer{cmd: cmd, dir: dir, url: fmt.Sprintf("redis://127.0.0.1:%d/0", port)}
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
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

func (s *redisServer) close() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}
