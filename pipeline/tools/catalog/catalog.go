package catalog

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is the key prefix New uses for an empty one: the store's
// default (store.DefaultPrefix), so the catalog sits beside the runs.
const DefaultPrefix = "sw"

// Spec is what the model is told about one tool.
type Spec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // JSON Schema of the arguments; empty: any object
	UpdatedAt   time.Time       `json:"updated_at"`           // set by Publish
	ExpiresAt   time.Time       `json:"expires_at"`           // set by Publish: UpdatedAt + ttl
}

// publish is publish.lua: the catalog's one script, embedded next to the
// package that runs it.
var (
	//go:embed publish.lua
	publishLua string
	publish    = redis.NewScript(publishLua)
)

// ErrCorrupt is wrapped by Get for an entry that does not decode.
var ErrCorrupt = errors.New("catalog: corrupt entry")

// Catalog reads and writes the tool catalog. It is safe for concurrent use.
type Catalog struct {
	rdb redis.UniversalClient
	key string
	now func() time.Time
}

// Option configures a Catalog.
type Option func(*Catalog)

// WithClock sets the clock that stamps and expires entries (default
// time.Now). Redis's own expiry of the whole hash uses Redis's clock.
func WithClock(now func() time.Time) Option {
	return func(c *Catalog) { c.now = now }
}

// New returns the catalog under prefix (empty: DefaultPrefix), whose hash is
// <prefix>:catalog. It does not talk to Redis.
func New(rdb redis.UniversalClient, prefix string, opts ...Option) *Catalog {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	c := &Catalog{rdb: rdb, key: prefix + ":catalog", now: time.Now}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Key returns the Redis key of the catalog hash.
func (c *Catalog) Key() string { return c.key }

// Publish writes specs, keyed by tool name, in one atomic script, stamping
// each with the current time and an expiry ttl later; a spec's Name is set
// to its key. ttl must be at least a millisecond. Publishing nothing is a no-op.
// A ctx that ends first fails the call with its error; the script then ran
// in full or not at all.
func (c *Catalog) Publish(ctx context.Context, specs map[string]Spec, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("catalog: ttl %s must be at least 1ms", ttl)
	}
	if len(specs) == 0 {
		return nil
	}
	now := c.now().UTC()
	names := make([]string, 0, len(specs))
	for name := range specs {
		names = append(names, name)
	}
	sort.Strings(names)
	fields := make(map[string]string, len(specs))
	for _, name := range names {
		s := specs[name]
		if name == "" {
			return errors.New("catalog: empty tool name")
		}
		if len(s.Parameters) > 0 && !json.Valid(s.Parameters) {
			return fmt.Errorf("catalog: tool %s: parameters are not valid JSON", name)
		}
		s.Name, s.UpdatedAt, s.ExpiresAt = name, now, now.Add(ttl)
		b, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("catalog: encode %s: %w", name, err)
		}
		fields[name] = string(b)
	}
	arg, err := json.Marshal(struct {
		TTL   int64             `json:"ttl"`
		Specs map[string]string `json:"specs"`
	}{ttl.Milliseconds(), fields})
	if err != nil {
		return fmt.Errorf("catalog: publish: %w", err)
	}
	if err := publish.Run(ctx, c.rdb, []string{c.key}, arg).Err(); err != nil {
		return fmt.Errorf("catalog: publish: %w", err)
	}
	return nil
}

// Get returns the live entries of names; a tool without one (never
// published, or expired) is absent from the map, not an error. With no names
// it returns every live entry. An entry that does not decode fails the call
// with an error wrapping ErrCorrupt. A ctx that ends first fails the call
// with its error.
func (c *Catalog) Get(ctx context.Context, names []string) (map[string]Spec, error) {
	raw := map[string]string{}
	if len(names) == 0 {
		all, err := c.rdb.HGetAll(ctx, c.key).Result()
		if err != nil {
			return nil, fmt.Errorf("catalog: read: %w", err)
		}
		raw = all
	} else {
		vals, err := c.rdb.HMGet(ctx, c.key, names...).Result()
		if err != nil {
			return nil, fmt.Errorf("catalog: read: %w", err)
		}
		for i, v := range vals {
			if s, ok := v.(string); ok {
				raw[names[i]] = s
			}
		}
	}
	now := c.now()
	out := make(map[string]Spec, len(raw))
	for name, v := range raw {
		var s Spec
		if err := json.Unmarshal([]byte(v), &s); err != nil {
			return nil, fmt.Errorf("%w %q: %v", ErrCorrupt, name, err)
		}
		if !s.ExpiresAt.IsZero() && !now.Before(s.ExpiresAt) {
			continue
		}
		out[name] = s
	}
	return out, nil
}
