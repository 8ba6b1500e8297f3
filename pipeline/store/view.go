package store

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// A fan-in view (Finished.View) is read only for a step of at most
// MaxViewCalls calls whose hashes' strings add up to at most MaxViewBytes.
// Beyond either, its fan-in reads the step from Redis as before: the
// round trip a view saves is shared by the step's calls, while what it
// costs (encoded by the script, copied through the producer, the broker
// and the consumer, parsed) grows with them. Measured side by side
// (benchmarks.md, 2026-11-26): a 20-call step's view of about 7 KB cost
// 13 % more allocation a step and no less Redis CPU; a 2-call step's of
// about 1 KB saved a fifth of the Redis CPU and 0.3 ms of the unloaded
// step. The byte bound also keeps ToolCallFinished far below Kafka's
// default message limit of 1 MB.
const (
	MaxViewCalls = 8
	MaxViewBytes = 16 << 10
)

// Finished is what FinishCall returns.
type Finished struct {
	// Call is the call as the outcome left it (see FinishCall for what a
	// call that is not parked carries).
	Call pipeline.ToolCall
	// FanIn says whether the step's fan-in is due.
	FanIn bool
	// View is the step as the finish left it, for the fan-in to end the
	// step from without reading it (ADR 0022): set when the call fans in
	// with a terminal outcome, every call of the step is terminal, the run
	// is running that committed step, no decision is held for it and no
	// outcome waits in its outbox, and it is small enough (MaxViewCalls,
	// MaxViewBytes; its JSON is at most six times the strings, an escape
	// each); nil otherwise. DecodeView reads it. The script that ends the
	// step checks the state it expects, so a view that has aged (a
	// redelivered message) is refused there, as a snapshot read before a
	// concurrent write would be.
	View json.RawMessage
	// ViewMAC authenticates View as its run's (hex HMAC-SHA256 of the run
	// id and the view under the key the deployment keeps in Redis): a view
	// that travels through Kafka is believed only when it comes from a
	// worker that can read Redis, and only for the run it was read from.
	ViewMAC string
}

// viewWire is a view as ToolCallFinished carries it, as finish_call.lua
// encodes it: the hashes as their field, value pairs.
type viewWire struct {
	Run   []string   `json:"run"`
	IDs   []string   `json:"ids"`
	Calls [][]string `json:"calls"`
}

// ErrViewForged is DecodeView's answer to a view whose MAC does not verify:
// not written by a worker of this deployment (or written under a key
// Redis no longer has).
var ErrViewForged = errors.New("the view's MAC does not verify")

// DecodeView reads a fan-in view of run runID (Finished.View and ViewMAC)
// as the snapshot a reconcile starts from: the run and the calls of its
// step, no decision held, no outcome waiting. Its sweep time is not known
// (zero). The run comes without its model and metadata: a run's own
// blobs, given at its creation and possibly big, that every view would
// otherwise carry through Lua, Kafka and two parsers, and that nothing a
// fan-in does reads. A view is made only of a running run at its tools
// state (finish_call.lua); a step it leads to is claimed, and the claim
// reads the run whole, and a result is published from the run its end
// wrote. A view whose MAC
// does not verify is ErrViewForged: Redis is the truth, and a view is only
// a copy of it that someone with no access to Redis must not be able to
// write.
func (s *Store) DecodeView(ctx context.Context, runID string, raw json.RawMessage, mac string) (Snapshot, error) {
	want, err := s.viewMAC(ctx, runID, raw)
	if err != nil {
		return Snapshot{}, err
	}
	if got, err := hex.DecodeString(mac); err != nil || !hmac.Equal(got, want[:]) {
		return Snapshot{}, fmt.Errorf("view of run %s: %w", runID, ErrViewForged)
	}
	w, err := parseView(raw)
	if err != nil {
		return Snapshot{}, fmt.Errorf("view of run %s: %w", runID, err)
	}
	if len(w.Calls) != len(w.IDs) || len(w.Run)%2 != 0 {
		return Snapshot{}, fmt.Errorf("view of run %s: %d call ids, %d calls, %d run fields", runID, len(w.IDs), len(w.Calls), len(w.Run))
	}
	snap := Snapshot{HeldKnown: true, Calls: make([]pipeline.ToolCall, len(w.IDs))}
	if snap.Run, err = decodeRun(runID, stringPairs(w.Run)); err != nil {
		return Snapshot{}, err
	}
	for i, h := range w.Calls {
		if len(h)%2 != 0 {
			return Snapshot{}, fmt.Errorf("view of run %s: call %s has an odd number of fields", runID, w.IDs[i])
		}
		if snap.Calls[i], err = decodeCall(runID, w.IDs[i], stringPairs(h)); err != nil {
			return Snapshot{}, err
		}
	}
	return snap, nil
}

// stringPairs is a hash as field, value pairs of strings (a view's).
type stringPairs []string

func (p stringPairs) get(field string) string {
	for i := 0; i+1 < len(p); i += 2 {
		if p[i] == field {
			return p[i+1]
		}
	}
	return ""
}
func (p stringPairs) size() int { return len(p) / 2 }

// viewKey is the key of the views' MACs, read from Redis at most once a
// viewKeyFor: a key deleted or replaced in Redis is taken up by every
// process within that, and until then their views only fail to verify
// (their fan-ins read the step).
type viewKey struct {
	mu     sync.Mutex
	key    []byte
	loaded time.Time
	macs   sync.Pool // of *keyedMAC, so that the two MACs of a step (made, checked) are not built anew
}

// keyedMAC is an HMAC-SHA256 under key with the buffers viewMAC writes
// through, so that a MAC taken from the pool costs no allocation.
type keyedMAC struct {
	key      []byte
	h        hash.Hash
	in, hsum []byte
}

const viewKeyFor = time.Minute

// viewKeyKey holds the key: 32 random bytes, written by the first worker
// that needs it (SET NX) and kept as long as the data it vouches for.
func (s *Store) viewKeyKey() string { return s.prefix + ":view-key" }

// viewMAC is the HMAC-SHA256 under the deployment's key of run runID's
// view: of the run id, a zero byte and the view. The view does not name
// its run (a hash's key does), so the MAC binds it to one: a view replayed
// in a message about another run at the same step does not verify there.
func (s *Store) viewMAC(ctx context.Context, runID string, view []byte) (mac [sha256.Size]byte, err error) {
	key, err := s.loadViewKey(ctx)
	if err != nil {
		return mac, err
	}
	m, _ := s.viewKey.macs.Get().(*keyedMAC)
	if m == nil || !bytes.Equal(m.key, key) {
		m = &keyedMAC{key: key, h: hmac.New(sha256.New, key)}
	} else {
		m.h.Reset()
	}
	m.in = append(append(m.in[:0], runID...), 0)
	m.h.Write(m.in)
	m.h.Write(view)
	m.hsum = m.h.Sum(m.hsum[:0])
	copy(mac[:], m.hsum)
	s.viewKey.macs.Put(m)
	return mac, nil
}

func (s *Store) loadViewKey(ctx context.Context) ([]byte, error) {
	s.viewKey.mu.Lock()
	defer s.viewKey.mu.Unlock()
	if s.viewKey.key != nil && time.Since(s.viewKey.loaded) < viewKeyFor {
		return s.viewKey.key, nil
	}
	fresh := make([]byte, 32)
	rand.Read(fresh)
	var stored *redis.StringCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SetNX(ctx, s.viewKeyKey(), hex.EncodeToString(fresh), 0)
		stored = p.Get(ctx, s.viewKeyKey())
		return nil
	}); err != nil {
		return nil, fmt.Errorf("the views' key: %w", err)
	}
	key, err := hex.DecodeString(stored.Val())
	if err != nil || len(key) < 16 {
		return nil, fmt.Errorf("the views' key at %s is not 16 or more hex-encoded bytes", s.viewKeyKey())
	}
	s.viewKey.key, s.viewKey.loaded = key, time.Now()
	return key, nil
}
