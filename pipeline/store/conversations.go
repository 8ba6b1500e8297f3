package store

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// The conversations this process has read for its claims, bounded in
// bytes. A run's conversation is append-only (create_run, commit_step and
// end_step push to it; nothing rewrites it), so a claim of the run's next
// step reads only its last turn again and what was appended since this
// process last read it, not the whole conversation: every step of a long
// run read all the steps before it, and decoded them. The last turn read
// again (from the last assistant message on) must be what was cached, byte
// for byte, else the whole conversation is read: a Redis that lost its
// last writes in a crash (appendfsync everysec) and saw the step run again
// holds another last turn than the one cached, and Redis is the truth.
const conversationCacheBytes = 64 << 20

// conversations caches decoded conversations by run, evicting the least
// recently read first once they hold more than their byte budget.
type conversations struct {
	mu    sync.Mutex
	runs  map[string]conversation
	order []queued // oldest first; an entry whose run was put again since is stale
	gen   uint64
	bytes int
}

// queued is a put, in the eviction order.
type queued struct {
	run string
	gen uint64
}

// conversation is a run's conversation as read: the run's creation time
// (a run created again under the same id after the first expired has
// another), its messages, the bytes they were read from, and its last
// turn as stored (the messages from the last assistant one on; all of them
// before there is one).
type conversation struct {
	created int64
	msgs    []pipeline.Message
	bytes   int
	last    []string
	gen     uint64 // of its put
	lent    bool   // got since its put: its messages' spare capacity is that claim's
}

// get returns the run's cached conversation. The first get since its put
// may append to the messages' spare capacity (joinConversation), so that a
// step's claim does not copy every message before it (a long run's claims
// did: quadratic in its steps); every caller's view of the messages ends at
// their length, so none sees what is appended there. A get while the
// conversation is lent (a claim that failed, or two of one run at once)
// gets the messages with no spare capacity: its append copies them.
func (c *conversations) get(runID string) conversation {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.runs[runID]
	if !ok {
		return v
	}
	if v.lent {
		v.msgs = slices.Clip(v.msgs)
		return v
	}
	v.lent = true
	c.runs[runID] = v
	return v
}

func (c *conversations) put(runID string, v conversation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]conversation{}
	}
	c.gen++
	v.gen = c.gen
	c.bytes += v.bytes - c.runs[runID].bytes
	c.runs[runID] = v
	c.order = append(c.order, queued{runID, v.gen})
	for c.bytes > conversationCacheBytes && len(c.order) > 0 {
		q := c.order[0]
		c.order = c.order[1:]
		if e := c.runs[q.run]; e.gen == q.gen {
			c.bytes -= e.bytes
			delete(c.runs, q.run)
		}
	}
	if len(c.order) > 2*len(c.runs)+64 { // drop the stale entries
		live := c.order[:0]
		for _, q := range c.order {
			if c.runs[q.run].gen == q.gen {
				live = append(live, q)
			}
		}
		c.order = live
	}
}

// forget drops the run's conversation: its run has ended, and nothing
// claims its steps again. Its place in the eviction order goes stale.
func (c *conversations) forget(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes -= c.runs[runID].bytes
	delete(c.runs, runID)
}

// readConversation queues on p the read of the run's conversation from the
// last turn this process has cached of it; joinConversation makes the
// whole conversation of it once the claim beside it has said which run it
// is.
func (s *Store) readConversation(ctx context.Context, p redis.Pipeliner, runID string) (conversation, *redis.StringSliceCmd) {
	cached := s.conversations.get(runID)
	return cached, p.LRange(ctx, s.msgsKey(runID), int64(len(cached.msgs)-len(cached.last)), -1)
}

// joinConversation returns the run's conversation: cached and what was read
// after it, when cached is of this run (its creation time) and its last
// turn is what Redis holds; otherwise the whole conversation, read again
// if the read did not start at its beginning.
//
// A read that failed beside a claim that did not (the connection broke
// between their replies) is made again, whole: the claimed step is the
// caller's, and nobody else would run it before its lease ran out.
func (s *Store) joinConversation(ctx context.Context, run pipeline.Run, cached conversation, read *redis.StringSliceCmd) ([]pipeline.Message, error) {
	raw, err := read.Result()
	created := toMillis(run.CreatedAt)
	if err != nil || cached.created != created || len(raw) < len(cached.last) || !slices.Equal(raw[:len(cached.last)], cached.last) {
		if err != nil || len(cached.msgs) > len(cached.last) { // the read failed, or began after the start
			if raw, err = s.rdb.LRange(ctx, s.msgsKey(run.ID), 0, -1).Result(); err != nil {
				return nil, fmt.Errorf("messages of run %s: %w", run.ID, err)
			}
		}
		cached = conversation{created: created}
	}
	// raw holds the cached last turn (if any), then what follows it.
	kept := len(cached.msgs) - len(cached.last)
	added, err := decodeMessages(run.ID, raw[len(cached.last):])
	if err != nil {
		return nil, err
	}
	whole := conversation{created: created, msgs: append(cached.msgs, added...), bytes: cached.bytes} // lent by get: see there
	for _, r := range raw[len(cached.last):] {
		whole.bytes += len(r)
	}
	turn := 0 // where the last turn begins in raw
	for i := len(whole.msgs) - 1; i >= kept; i-- {
		if whole.msgs[i].Role == pipeline.RoleAssistant {
			turn = i - kept
			break
		}
	}
	whole.last = slices.Clone(raw[turn:])
	s.conversations.put(run.ID, whole)
	return slices.Clip(whole.msgs), nil // shared with the cache: see Claimed
}
