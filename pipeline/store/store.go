package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/encoding/json"

	"github.com/stepwise-run/stepwise/pipeline"
)

// DefaultPrefix is the key prefix New uses unless WithPrefix says otherwise.
const DefaultPrefix = "sw"

// Store keeps runs, their messages, tool calls and event logs in Redis. It is
// safe for concurrent use by many goroutines and many processes: every state
// change is one Lua script that checks the state it expects before writing.
//
// Clocks: every operation that changes state takes `now` from the caller and
// stores unix milliseconds; the scripts never read the server's clock (only
// the stream ids of events come from Redis).
type Store struct {
	rdb        redis.UniversalClient
	wait       redis.UniversalClient // for the reads that block (WithWaitClient); rdb unless set
	prefix     string
	retention  time.Duration // of ended runs' keys; 0 keeps them (retention.go)
	archive    bool          // ended runs' keys wait for Archived to start their retention (archive.go)
	cluster    bool          // rdb is a Redis Cluster: global indexes live on other nodes than a run
	searchable []string      // metadata keys runs are indexed by, sorted (search.go)

	scripts scripts

	conversations    conversations // read for claims (conversations.go)
	tenantsIndexed   atomic.Bool   // the tenants' pending indexes hold the calls parked before them (pending.go)
	tenantRunsListed atomic.Bool   // the tenants' run indexes hold the runs created before them (list.go)
	liveListed       atomic.Bool   // the live index holds the live runs created before it (list.go)
	searchListed     atomic.Bool   // the search indexes hold the runs created before them (search.go)
	filling          sync.Mutex    // held while one of the four is being made true (indexes.go)
}

// Option configures a Store.
type Option func(*Store)

// WithPrefix sets the prefix of every key (default "sw"). Two stores with
// different prefixes on one Redis never see each other's runs.
func WithPrefix(p string) Option {
	return func(s *Store) { s.prefix = p }
}

// WithWaitClient gives the store another client, on the same Redis, for
// the reads that block until events arrive (WaitEvents): each holds its
// connection for as long as it waits, so on rdb's pool a few dozen
// waiting event streams would make every other command queue for a
// connection. The caller closes it. nil: rdb.
func WithWaitClient(c redis.UniversalClient) Option {
	return func(s *Store) {
		if c != nil {
			s.wait = c
		}
	}
}

// New returns a Store over rdb. It does not talk to Redis; use Ping for that.
// The scripts are loaded lazily (EVALSHA, falling back to EVAL once).
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	_, cluster := rdb.(*redis.ClusterClient)
	s := &Store{rdb: rdb, wait: rdb, prefix: DefaultPrefix, cluster: cluster}
	for _, o := range opts {
		o(s)
	}
	s.scripts = loadScripts(libConsts(s.endTTL()))
	return s
}

// Ping checks that Redis answers. It returns ctx's error when ctx ends first.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping redis: %w", err)
	}
	return nil
}

// Every status, in a fixed order, so the lists derived from them
// (tables.go) do not depend on map order.
var (
	runStatuses  = []pipeline.RunStatus{pipeline.RunCreated, pipeline.RunRunning, pipeline.RunWaiting, pipeline.RunDone}
	callStatuses = []pipeline.ToolCallStatus{
		pipeline.CallNew, pipeline.CallRunning, pipeline.CallSuspended, pipeline.CallResuming,
		pipeline.CallSucceeded, pipeline.CallFailed, pipeline.CallCancelled,
	}
)

// Script error codes: a script refuses with redis.error_reply("CODE what was
// found"). errRetry is internal: what the caller read before the script
// (a call's arguments, a step's calls) changed before it ran; the caller
// reads again.
var errRetry = errors.New("retry")

var scriptCodes = map[string]error{
	"NOT_FOUND":  ErrNotFound,
	"CONFLICT":   ErrConflict,
	"STALE":      ErrStale,
	"LEASE_HELD": ErrLeaseHeld,
	"LEASE_LOST": ErrLeaseLost,
	"RETRY":      errRetry,
}

// scriptError maps a script's error reply to a sentinel, wrapped with what
// was asked and what the script found. Only the code (first word) is
// matched: real Redis passes "CODE text" through, miniredis may prefix
// "ERR ". Any other error is returned wrapped as it is.
func scriptError(err error, what string) error {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return fmt.Errorf("%s: %w", what, err)
	}
	msg := strings.TrimPrefix(rerr.Error(), "ERR ")
	code, found, _ := strings.Cut(msg, " ")
	if sentinel, ok := scriptCodes[code]; ok {
		return fmt.Errorf("%w: %s: %s", sentinel, what, found)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// evalAmong sends c in one pipeline with other commands: fill adds them,
// calling eval where the script goes among them. It returns the script's
// reply or its error as Redis gave it; the other commands' results are in
// their Cmds. A script Redis has not cached (NOSCRIPT) is loaded and the
// whole pipeline sent again, once: what goes beside a script must be safe
// to send twice. It releases c.
func (s *Store) evalAmong(ctx context.Context, c script, fill func(p redis.Pipeliner, eval func())) (any, error) {
	return s.sendLoaded(ctx, c, func() *redis.Cmd {
		var cmd *redis.Cmd
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			fill(p, func() {
				cmd = c.cmd(ctx)
				_ = p.Process(ctx, cmd)
			})
			return nil
		})
		return cmd
	})
}

// eval runs a script and maps its refusals to sentinels.
func (s *Store) eval(ctx context.Context, sc *redis.Script, what string, keys []string, args ...any) (any, error) {
	return s.run(ctx, scriptOf(sc, keys, args), what)
}

// call runs sc over keys with its one argument, arg as JSON: the script
// reads it as `local a = cjson.decode(ARGV[1])`, each field by name.
func (s *Store) call(ctx context.Context, sc *redis.Script, what string, keys []string, arg any) (any, error) {
	c, err := callOf(sc, keys, arg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return s.run(ctx, c, what)
}

// callOf is call's command, for a caller that sends it among other
// commands (evalAmong) or runs it later (run). The argument is marshalled
// with segmentio/encoding/json, the messages' codec (ADR 0026): the JSON
// encoding/json writes, in less CPU, on every script call.
func callOf(sc *redis.Script, keys []string, arg any) (script, error) {
	b, err := json.Marshal(arg)
	if err != nil {
		return script{}, err
	}
	return scriptOf(sc, keys, []any{b}), nil
}

// run runs c alone, in one round trip, and maps its refusals to
// sentinels. It releases c.
func (s *Store) run(ctx context.Context, c script, what string) (any, error) {
	v, err := s.sendLoaded(ctx, c, func() *redis.Cmd {
		cmd := c.cmd(ctx)
		_ = s.rdb.Process(ctx, cmd)
		return cmd
	})
	if err != nil {
		return nil, scriptError(err, what)
	}
	return v, nil
}

// sendLoaded returns the reply to c that send sends; when Redis has not
// cached c's script (NOSCRIPT), it loads it and sends again, once. Then it
// releases c.
func (s *Store) sendLoaded(ctx context.Context, c script, send func() *redis.Cmd) (any, error) {
	defer c.release()
	for attempt := 0; ; attempt++ {
		v, err := send().Result()
		if err != nil && attempt == 0 && redis.HasErrorPrefix(err, "NOSCRIPT") {
			if err := c.sc.Load(ctx, s.rdb).Err(); err != nil {
				return nil, fmt.Errorf("load the script: %w", err)
			}
			continue
		}
		return v, err
	}
}

// checkLease refuses a lease without an owner or one that has already
// expired at now: a claim with it would hold nothing.
func checkLease(l Lease, now time.Time) error {
	if l.Owner == "" || !l.Until.After(now) {
		return fmt.Errorf("%w: lease %q until %s is empty or already expired at %s", ErrInvalid, l.Owner, l.Until, now)
	}
	return nil
}
