package testinfra

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// EnvRedis names an existing Redis the tests use instead of starting one.
const EnvRedis = "STEPWISE_TEST_REDIS"

var fallbackNotice sync.Once

// Redis returns the URL of a Redis private to t (see the package doc for
// where it comes from). It is stopped when t ends.
func Redis(t testing.TB) string {
	t.Helper()
	if url := os.Getenv(EnvRedis); url != "" {
		return url
	}
	if useContainers() {
		return RedisContainer(t)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is not on PATH and CI=true: install it (apt-get install -y redis-server)")
		}
		fallbackNotice.Do(func() {
			fmt.Fprintln(os.Stderr, "testinfra: no redis-server on PATH, using miniredis (install redis-server for the real thing)")
		})
		return Miniredis(t)
	}
	return RedisServer(t)
}

// RedisClient returns a go-redis client on Redis(t), closed when t ends.
func RedisClient(t testing.TB) *redis.Client {
	t.Helper()
	return clientFor(t, Redis(t))
}

// RedisServer starts a private redis-server on a random port, keeping nothing
// on disk, and returns its URL. It fails t when redis-server is missing.
func RedisServer(t testing.TB) string {
	t.Helper()
	addr := startRedisServer(t, nil, func(port int, dir string) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1"}
	}, func(addr string, pid int) bool { return waitReady(addr, pid, 5*time.Second) })
	return "redis://" + addr + "/0"
}

// startRedisServer starts redis-server on a free port (one usable(port)
// accepts, when given) with the arguments args gives for it and a private
// directory, and nothing kept on disk; it tries another port when ready
// does not see it, process pid, up (the port was probably taken between
// finding it and binding it). It stops the server when t ends and returns
// its address.
func startRedisServer(t testing.TB, usable func(port int) bool, args func(port int, dir string) []string, ready func(addr string, pid int) bool) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not on PATH: %v", err)
	}
	for attempt := 0; attempt < 20; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		if usable != nil && !usable(port) {
			continue
		}
		dir := t.TempDir()
		cmd := exec.Command(bin, append(args(port, dir),
			"--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning")...)
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if ready(addr, cmd.Process.Pid) {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			})
			return addr
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	t.Fatalf("redis-server did not become ready")
	return ""
}

// Miniredis starts an in-process miniredis and returns its URL.
func Miniredis(t testing.TB) string {
	t.Helper()
	m := miniredis.RunT(t)
	return "redis://" + m.Addr() + "/0"
}

// MiniredisClient returns a go-redis client on a private miniredis.
func MiniredisClient(t testing.TB) *redis.Client {
	t.Helper()
	return clientFor(t, Miniredis(t))
}

// RedisServerClient returns a go-redis client on a private redis-server.
func RedisServerClient(t testing.TB) *redis.Client {
	t.Helper()
	return clientFor(t, RedisServer(t))
}

func clientFor(t testing.TB, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("parse redis url %q: %v", url, err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls addr until the redis-server of process pid answers, or
// d passes. It asks the server its process id, not just for a PONG: when
// the port was taken between freePort and the bind (by another test's
// server), ours exits and the other answers, and two tests would share
// one server's data, sweepers and counts.
func waitReady(addr string, pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		got, ok := serverPID(ctx, addr)
		cancel()
		if ok {
			return got == pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// serverPID asks the server at addr its process id (INFO server) in raw
// RESP; false when it does not answer one.
func serverPID(ctx context.Context, addr string) (int, bool) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, false
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("INFO server\r\n")); err != nil {
		return 0, false
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		return 0, false // an error reply: loading, or not a Redis
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return 0, false
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			return pid, err == nil
		}
	}
	return 0, false
}
