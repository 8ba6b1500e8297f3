package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline/tools/catalog"
)

// The suite runs against a real Redis (see testinfra) and against miniredis,
// which dev mode embeds.
func TestCatalog(t *testing.T) {
	backends := map[string]func(testing.TB) *redis.Client{
		"redis":     func(t testing.TB) *redis.Client { return testinfra.RedisClient(t) },
		"miniredis": func(t testing.TB) *redis.Client { return testinfra.MiniredisClient(t) },
	}
	for name, newClient := range backends {
		t.Run(name, func(t *testing.T) {
			for _, c := range suite {
				t.Run(c.name, func(t *testing.T) { c.test(t, newClient(t)) })
			}
		})
	}
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func at(ts time.Time) catalog.Option { return catalog.WithClock(func() time.Time { return ts }) }

var sumSpec = catalog.Spec{
	Description: "Adds two numbers.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
}

var suite = []struct {
	name string
	test func(t *testing.T, rdb *redis.Client)
}{
	{"published specs are read back stamped", func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		cat := catalog.New(rdb, "t", at(t0))
		if err := cat.Publish(ctx, map[string]catalog.Spec{"get_sum": sumSpec}, time.Minute); err != nil {
			t.Fatal(err)
		}
		got, err := cat.Get(ctx, []string{"get_sum"})
		if err != nil {
			t.Fatal(err)
		}
		s, ok := got["get_sum"]
		if !ok || len(got) != 1 {
			t.Fatalf("Get = %v, want get_sum only", got)
		}
		if s.Name != "get_sum" || s.Description != sumSpec.Description || string(s.Parameters) != string(sumSpec.Parameters) {
			t.Fatalf("spec = %+v", s)
		}
		if !s.UpdatedAt.Equal(t0) || !s.ExpiresAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("stamps = %s, %s; want %s and a minute later", s.UpdatedAt, s.ExpiresAt, t0)
		}
	}},
	{"the hash is one key with JSON values", func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		cat := catalog.New(rdb, "t", at(t0))
		if err := cat.Publish(ctx, map[string]catalog.Spec{"get_sum": sumSpec}, time.Minute); err != nil {
			t.Fatal(err)
		}
		if cat.Key() != "t:catalog" {
			t.Fatalf("Key = %q", cat.Key())
		}
		raw, err := rdb.HGet(ctx, "t:catalog", "get_sum").Result()
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			t.Fatalf("value %q: %v", raw, err)
		}
		for _, k := range []string{"name", "description", "parameters", "updated_at", "expires_at"} {
			if _, ok := v[k]; !ok {
				t.Errorf("value %s lacks %q", raw, k)
			}
		}
	}},
	{"unknown names are absent, not errors", func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		cat := catalog.New(rdb, "t", at(t0))
		got, err := cat.Get(ctx, []string{"nope"})
		if err != nil || len(got) != 0 {
			t.Fatalf("Get on an empty catalog = %v, %v", got, err)
		}
		if err := cat.Publish(ctx, map[string]catalog.Spec{"get_sum": sumSpec}, time.Minute); err != nil {
			t.Fatal(err)
		}
		got, err = cat.Get(ctx, []string{"nope", "get_sum"})
		if _, ok := got["get_sum"]; err != nil || !ok || len(got) != 1 {
			t.Fatalf("Get = %v, %v", got, err)
		}
	}},
	{"publishers add to each other and overwrite their own", func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		a := catalog.New(rdb, "t", at(t0))
		b := catalog.New(rdb, "t", at(t0.Add(time.Second)))
		if err := a.Publish(ctx, map[string]catalog.Spec{"x": {Description: "x v1"}, "y": {Description: "y v1"}}, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := b.Publish(ctx, map[string]catalog.Spec{"y": {Description: "y v2"}, "z": {Description: "z v1"}}, time.Minute); err != nil {
			t.Fatal(err)
		}
		got, err := b.Get(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"x": "x v1", "y": "y v2", "z": "z v1"}
		if len(got) != len(want) {
			t.Fatalf("Get(nil) = %v, want %v", got, want)
		}
		for name, desc := range want {
			if got[name].Description != desc {
				t.Errorf("%s = %q, want %q", name, got[name].Description, desc)
			}
		}
	}},
	{"an entry not republished within its ttl is hidden", func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		if err := catalog.New(rdb, "t", at(t0)).Publish(ctx, map[string]catalog.Spec{"old": {}}, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := catalog.New(rdb, "t", at(t0.Add(50*time.Second))).Publish(ctx, map[string]catalog.Spec{"fresh": {}}, time.Minute); err != nil {
			t.Fatal(err)
		}
		got, err := catalog.New(rdb, "t", at(t0.Add(time.Minute))).Get(ctx, []string{"old", "fresh"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got["old"]; ok || len(got) != 1 {
			t.Fatalf("Get a minute later = %v, want fresh only", got)
		}
	}},
	{"the hash expires no sooner than the longest ttl", func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		cat := catalog.New(rdb, "t", at(t0))
		if err := cat.Publish(ctx, map[string]catalog.Spec{"a": {}}, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := cat.Publish(ctx, map[string]catalog.Spec{"b": {}}, time.Minute); err != nil {
			t.Fatal(err)
		}
		ttl, err := rdb.PTTL(ctx, "t:catalog").Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 59*time.Minute || ttl > time.Hour {
			t.Fatalf("PTTL = %s, want about an hour", ttl)
		}
	}},
	{"prefixes keep catalogs apart", func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		if err := catalog.New(rdb, "one", at(t0)).Publish(ctx, map[string]catalog.Spec{"a": {}}, time.Minute); err != nil {
			t.Fatal(err)
		}
		got, err := catalog.New(rdb, "two", at(t0)).Get(ctx, nil)
		if err != nil || len(got) != 0 {
			t.Fatalf("other prefix sees %v, %v", got, err)
		}
		if k := catalog.New(rdb, "").Key(); k != "sw:catalog" {
			t.Fatalf("default key = %q, want sw:catalog", k)
		}
	}},
	{"bad input is refused before writing", func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		cat := catalog.New(rdb, "t", at(t0))
		for name, c := range map[string]struct {
			specs map[string]catalog.Spec
			ttl   time.Duration
		}{
			"zero ttl":           {map[string]catalog.Spec{"a": {}}, 0},
			"empty name":         {map[string]catalog.Spec{"": {}}, time.Minute},
			"invalid parameters": {map[string]catalog.Spec{"a": {Parameters: json.RawMessage(`{"type":`)}}, time.Minute},
		} {
			if err := cat.Publish(ctx, c.specs, c.ttl); err == nil {
				t.Errorf("%s: Publish succeeded", name)
			}
		}
		if n, _ := rdb.Exists(ctx, cat.Key()).Result(); n != 0 {
			t.Fatalf("something was written")
		}
	}},
	{"a corrupt entry is an error", func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		cat := catalog.New(rdb, "t", at(t0))
		rdb.HSet(ctx, cat.Key(), "bad", "{not json")
		if _, err := cat.Get(ctx, []string{"bad"}); !errors.Is(err, catalog.ErrCorrupt) {
			t.Fatalf("Get = %v, want ErrCorrupt", err)
		}
	}},
}
