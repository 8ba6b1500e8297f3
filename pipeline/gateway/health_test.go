package gateway_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// unreachableRedis returns a client for an address nobody listens on.
func unreachableRedis(t *testing.T) *redis.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func TestHealthz_answers_ok(t *testing.T) {
	h := newHarness(t)
	var body gateway.Health
	h.get("/healthz").want(t, http.StatusOK, &body)
	if body.Status != "ok" {
		t.Errorf("status %q, want ok", body.Status)
	}
}

func TestReadyz_answers_ok_when_the_store_and_the_Ready_check_pass(t *testing.T) {
	called := false
	h := newHarness(t, func(c *gateway.Config) {
		c.Ready = func(context.Context) error { called = true; return nil }
	})
	h.get("/readyz").want(t, http.StatusOK, nil)
	if !called {
		t.Error("the Ready check was not called")
	}
}

func TestReadyz_fails_naming_the_Ready_check_that_failed(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) {
		c.Ready = func(context.Context) error { return errors.New("kafka: no brokers") }
	})
	h.get("/readyz").wantError(t, http.StatusServiceUnavailable, "unavailable", "kafka: no brokers")
}

func TestReadyz_fails_naming_redis_when_the_store_is_unreachable(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) { c.Store = store.New(unreachableRedis(t)) })
	h.get("/readyz").wantError(t, http.StatusServiceUnavailable, "unavailable", "redis")
	// Liveness does not depend on Redis.
	h.get("/healthz").want(t, http.StatusOK, nil)
}
