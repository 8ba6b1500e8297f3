package limits_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/limits"
)

var t0 = time.UnixMilli(1_700_000_080_000) // 40 s into a minute

func newLimiter(t *testing.T, models map[string]config.Limit) *limits.Limiter {
	t.Helper()
	return limits.New(testinfra.RedisServerClient(t), fmt.Sprintf("t%d", time.Now().UnixNano()), config.Limits{Models: models})
}

func slot(holder, tenant string) limits.Slot {
	return limits.Slot{Kind: limits.Model, Name: "m", Tenant: tenant, Holder: holder, Waiter: "w-" + holder}
}

func acquire(t *testing.T, l *limits.Limiter, s limits.Slot, now time.Time) limits.Grant {
	t.Helper()
	g, err := l.Acquire(context.Background(), s, 10*time.Second, now)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Concurrency: the cap holds, a refused holder waits in line, a release
// names the oldest waiter, a holder's repeat is a renewal, and a slot
// whose lease ran out is free again.
func TestLimiter_concurrency_and_its_queue(t *testing.T) {
	ctx := context.Background()
	l := newLimiter(t, map[string]config.Limit{"m": {Concurrency: 2}})
	for _, h := range []string{"a", "b"} {
		if g := acquire(t, l, slot(h, "x"), t0); !g.OK {
			t.Fatalf("%s refused: %+v", h, g)
		}
	}
	if g := acquire(t, l, slot("a", "x"), t0); !g.OK {
		t.Fatalf("a held slot asked again: %+v", g)
	}
	for _, h := range []string{"c", "d"} {
		if g := acquire(t, l, slot(h, "x"), t0.Add(time.Millisecond)); g.OK || g.RetryAfter != 0 || g.Reason != "concurrency 2" {
			t.Fatalf("%s over the cap: %+v", h, g)
		}
	}
	if w, err := l.Release(ctx, slot("a", "x")); err != nil || w != "w-c" {
		t.Fatalf("release a woke %q, %v; want the oldest waiter w-c", w, err)
	}
	if w, _ := l.Release(ctx, slot("a", "x")); w != "" {
		t.Fatalf("a second release of a woke %q", w)
	}
	if g := acquire(t, l, slot("c", "x"), t0.Add(time.Second)); !g.OK {
		t.Fatalf("c after a's release: %+v", g)
	}
	// b and c hold; b's lease ends at t0+10s, c's at t0+11s.
	if g := acquire(t, l, slot("e", "x"), t0.Add(10*time.Second+time.Millisecond)); !g.OK {
		t.Fatalf("e once b's lease ran out: %+v", g)
	}
	if err := l.Renew(ctx, slot("c", "x"), time.Minute, t0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if g := acquire(t, l, slot("f", "x"), t0.Add(12*time.Second)); g.OK {
		t.Fatalf("f while c (renewed) and e hold: %+v", g)
	}
}

// A tenant may hold its share of the slots, and no more.
func TestLimiter_tenant_share(t *testing.T) {
	l := newLimiter(t, map[string]config.Limit{"m": {Concurrency: 4, TenantShare: 0.5}})
	for i, want := range []bool{true, true, false} {
		if g := acquire(t, l, slot(fmt.Sprint("big-", i), "big"), t0); g.OK != want {
			t.Fatalf("big tenant's slot %d: %+v", i, g)
		}
	}
	if g := acquire(t, l, slot("small-0", "small"), t0); !g.OK {
		t.Fatalf("the other tenant is starved: %+v", g)
	}
}

// Requests per minute: a burst of up to rpm, then one every minute/rpm,
// and the refusal says when.
func TestLimiter_requests_per_minute(t *testing.T) {
	l := newLimiter(t, map[string]config.Limit{"m": {RPM: 60}})
	for i := range 60 {
		if g := acquire(t, l, slot(fmt.Sprint(i), "x"), t0); !g.OK {
			t.Fatalf("request %d of the burst: %+v", i, g)
		}
	}
	g := acquire(t, l, slot("61", "x"), t0)
	if g.OK || g.RetryAfter != time.Second || g.Reason != "requests per minute 60" {
		t.Fatalf("over the rate: %+v", g)
	}
	if g := acquire(t, l, slot("61", "x"), t0.Add(time.Second)); !g.OK {
		t.Fatalf("a second later: %+v", g)
	}
}

// Tokens per minute: once the minute's tokens reach the cap, inferences
// wait for the minute to pass; a 429 cools the model down for everyone.
func TestLimiter_tokens_per_minute_and_cooldown(t *testing.T) {
	ctx := context.Background()
	l := newLimiter(t, map[string]config.Limit{"m": {TPM: 1000}})
	if g := acquire(t, l, slot("a", "x"), t0); !g.OK {
		t.Fatal(g)
	}
	if err := l.Used(ctx, "m", 1000, t0); err != nil {
		t.Fatal(err)
	}
	if g := acquire(t, l, slot("b", "x"), t0); g.OK || g.RetryAfter != 20*time.Second {
		t.Fatalf("over the tokens: %+v", g)
	}
	if err := l.CoolDown(ctx, "m", 30*time.Second, t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := l.CoolDown(ctx, "m", time.Second, t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if g := acquire(t, l, slot("b", "x"), t0.Add(25*time.Second)); g.OK || g.RetryAfter != 25*time.Second {
		t.Fatalf("cooling down: %+v", g)
	}
	if g := acquire(t, l, slot("b", "x"), t0.Add(50*time.Second)); !g.OK {
		t.Fatalf("after the cooldown, a minute later: %+v", g)
	}
	unlimited := acquire(t, l, limits.Slot{Kind: limits.Model, Name: "other", Holder: "z"}, t0)
	if !unlimited.OK || l.Limited(limits.Model, "other") {
		t.Fatalf("a model without limits: %+v", unlimited)
	}
}

// A batch may hold its share of the slots; runs of no batch, or of another
// batch, are not held back by it.
func TestLimiter_batch_share(t *testing.T) {
	l := newLimiter(t, map[string]config.Limit{"m": {Concurrency: 4, BatchShare: 0.25}})
	in := func(holder, batch string) limits.Slot {
		s := slot(holder, "x")
		s.Batch = batch
		return s
	}
	for i, c := range []struct {
		s    limits.Slot
		want bool
	}{{in("a1", "a"), true}, {in("a2", "a"), false}, {in("b1", "b"), true}, {in("n1", ""), true}, {in("n2", ""), true}} {
		if g := acquire(t, l, c.s, t0); g.OK != c.want {
			t.Fatalf("slot %d (%s of batch %q): %+v", i, c.s.Holder, c.s.Batch, g)
		}
	}
}
