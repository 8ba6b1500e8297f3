package limits

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

var (
	//go:embed acquire.lua
	acquireSrc    string
	acquireScript = redis.NewScript(acquireSrc)
	//go:embed release.lua
	releaseSrc    string
	releaseScript = redis.NewScript(releaseSrc)
)

// Limiter applies the configuration's limits. It holds no state of its
// own: every worker's Limiter shares Redis's.
type Limiter struct {
	rdb    redis.UniversalClient
	prefix string
	limits config.Limits
}

// New returns a Limiter over rdb whose keys start with prefix (the
// store's, so a deployment's limits sit beside its runs).
func New(rdb redis.UniversalClient, prefix string, limits config.Limits) *Limiter {
	return &Limiter{rdb: rdb, prefix: prefix, limits: limits}
}

// The kinds of limited things (limits.models, limits.tools).
const (
	Model = "model"
	Tool  = "tool"
)

// Slot is a request for a slot of a model's or a tool's limits.
type Slot struct {
	Kind   string // Model or Tool
	Name   string // the model's key (config.Model.Key), the tool's name
	Tenant string // whose share it counts against ("" for tools)
	Batch  string // which batch's share it counts against ("" for none)
	Holder string // who holds it: unique per attempt (a step's claim, a call)
	Waiter string // queued under this name when it must wait for a slot
}

// Grant is the answer to Acquire: granted, or when to ask again and why.
type Grant struct {
	OK bool
	// RetryAfter is how long to wait before asking again; 0 when the
	// slot comes free only when another holder releases it (Release then
	// names this waiter).
	RetryAfter time.Duration
	Reason     string
}

// key is a key of the limits of kind name, all in one cluster slot.
func (l *Limiter) key(kind, name, part string) string {
	return l.prefix + ":limit:{" + kind + ":" + name + "}:" + part
}

// limit returns the configured limit of kind name.
func (l *Limiter) limit(kind, name string) (config.Limit, bool) {
	if kind == Tool {
		return l.limits.Tool(name)
	}
	return l.limits.Model(name)
}

// Limited reports whether kind name (Model, Tool) has any limit.
func (l *Limiter) Limited(kind, name string) bool {
	_, ok := l.limit(kind, name)
	return ok
}

// Acquire takes a slot for s until now+lease, or says why not. A model
// without limits is always granted.
func (l *Limiter) Acquire(ctx context.Context, s Slot, lease time.Duration, now time.Time) (Grant, error) {
	lim, ok := l.limit(s.Kind, s.Name)
	if !ok {
		return Grant{OK: true}, nil
	}
	ms := now.UnixMilli()
	minute := ms / 60000
	k := func(part string) string { return l.key(s.Kind, s.Name, part) }
	keys := []string{
		k("slots"), k("tenant:" + s.Tenant), k("rate"),
		k("tokens:" + strconv.FormatInt(minute, 10)), k("tokens:" + strconv.FormatInt(minute-1, 10)),
		k("cooldown"), k("waiters"), k("batch:" + s.Batch),
	}
	arg, err := json.Marshal(acquireArg{
		Now: ms, Holder: s.Holder, LeaseEnd: now.Add(lease).UnixMilli(), Concurrency: lim.Concurrency,
		TenantSlots: lim.TenantSlots(), RPM: lim.RPM, TPM: lim.TPM, Elapsed: ms % 60000, Waiter: s.Waiter,
		BatchSlots: batchSlots(lim, s.Batch),
	})
	if err != nil {
		return Grant{}, fmt.Errorf("limits of %s %s: acquire for %s: %w", s.Kind, s.Name, s.Holder, err)
	}
	v, err := acquireScript.Run(ctx, l.rdb, keys, arg).Slice()
	if err != nil {
		return Grant{}, fmt.Errorf("limits of %s %s: acquire for %s: %w", s.Kind, s.Name, s.Holder, err)
	}
	if n, _ := v[0].(int64); n == 1 {
		return Grant{OK: true}, nil
	}
	retry, _ := v[1].(int64)
	reason, _ := v[2].(string)
	return Grant{RetryAfter: time.Duration(max(retry, 0)) * time.Millisecond, Reason: reason}, nil
}

// acquireArg is acquire.lua's argument.
type acquireArg struct {
	Now         int64  `json:"now"`
	Holder      string `json:"holder"`
	LeaseEnd    int64  `json:"lease_end"`
	Concurrency int    `json:"concurrency"`
	TenantSlots int    `json:"tenant_slots"`
	RPM         int    `json:"rpm"`
	TPM         int64  `json:"tpm"`
	Elapsed     int64  `json:"elapsed"`
	Waiter      string `json:"waiter"`
	BatchSlots  int    `json:"batch_slots"`
}

// batchSlots is how many slots a run of batch may hold (0: no bound; a run
// of no batch is bound by no batch share).
func batchSlots(lim config.Limit, batch string) int {
	if batch == "" {
		return 0
	}
	return lim.BatchSlots()
}

// Renew extends s's slot to now+lease (Acquire of a held slot renews it).
func (l *Limiter) Renew(ctx context.Context, s Slot, lease time.Duration, now time.Time) error {
	if !l.Limited(s.Kind, s.Name) {
		return nil
	}
	return l.rdb.ZAddXX(ctx, l.key(s.Kind, s.Name, "slots"), redis.Z{Score: float64(now.Add(lease).UnixMilli()), Member: s.Holder}).Err()
}

// Release frees s's slot and returns the waiter whose turn it is ("" for
// none): the caller wakes it.
func (l *Limiter) Release(ctx context.Context, s Slot) (string, error) {
	if !l.Limited(s.Kind, s.Name) {
		return "", nil
	}
	keys := []string{l.key(s.Kind, s.Name, "slots"), l.key(s.Kind, s.Name, "tenant:"+s.Tenant), l.key(s.Kind, s.Name, "waiters"),
		l.key(s.Kind, s.Name, "batch:"+s.Batch)}
	arg, err := json.Marshal(struct {
		Holder string `json:"holder"`
	}{s.Holder})
	if err != nil {
		return "", fmt.Errorf("limits of %s %s: release %s: %w", s.Kind, s.Name, s.Holder, err)
	}
	w, err := releaseScript.Run(ctx, l.rdb, keys, arg).Text()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("limits of %s %s: release %s: %w", s.Kind, s.Name, s.Holder, err)
	}
	return w, nil
}

// Used adds tokens a finished inference used to this minute's count
// (tokens per minute). A model without a tpm limit keeps no count.
func (l *Limiter) Used(ctx context.Context, model string, tokens int64, now time.Time) error {
	lim, ok := l.limits.Model(model)
	if !ok || lim.TPM == 0 || tokens <= 0 {
		return nil
	}
	key := l.key(Model, model, "tokens:"+strconv.FormatInt(now.UnixMilli()/60000, 10))
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.IncrBy(ctx, key, tokens)
		p.Expire(ctx, key, 3*time.Minute)
		return nil
	})
	if err != nil {
		return fmt.Errorf("limits of model %s: count %d tokens: %w", model, tokens, err)
	}
	return nil
}

// CoolDown makes every worker wait until now+d before the model's next
// inference: what a provider's 429 with Retry-After asks. A later
// cooldown never shortens an earlier one. Only a model with limits is
// cooled down (the others are not asked before each inference).
func (l *Limiter) CoolDown(ctx context.Context, model string, d time.Duration, now time.Time) error {
	if d <= 0 || !l.Limited(Model, model) {
		return nil
	}
	until := now.Add(d).UnixMilli()
	key := l.key(Model, model, "cooldown")
	err := l.rdb.Watch(ctx, func(tx *redis.Tx) error {
		cur, err := tx.Get(ctx, key).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if cur >= until {
			return nil
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, until, d+time.Minute)
			return nil
		})
		return err
	}, key)
	if err != nil {
		return fmt.Errorf("limits of model %s: cool down for %s: %w", model, d, err)
	}
	return nil
}
