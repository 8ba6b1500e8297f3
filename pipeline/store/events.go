package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Events returns the run's events strictly after afterID ("" = from the
// start), oldest first, at most count of them (count <= 0: all). Each has ID
// set to its stream id, which is what afterID takes to resume. A run with no
// events (or no run) gives an empty slice.
func (s *Store) Events(ctx context.Context, runID, afterID string, count int64) ([]pipeline.Event, error) {
	start := "-"
	if afterID != "" {
		start = "(" + afterID
	}
	var msgs []redis.XMessage
	var err error
	if count > 0 {
		msgs, err = s.rdb.XRangeN(ctx, s.eventsKey(runID), start, "+", count).Result()
	} else {
		msgs, err = s.rdb.XRange(ctx, s.eventsKey(runID), start, "+").Result()
	}
	if err != nil {
		return nil, fmt.Errorf("events of run %s after %q: %w", runID, afterID, err)
	}
	return s.decodeEvents(ctx, runID, msgs)
}

// WaitEvents blocks up to block for events of the run strictly after afterID
// ("" = from the start) and returns those that are there, oldest first. It
// returns an empty slice, and no error, when block passes with nothing new.
// block <= 0 does not block (it is Events without a count).
//
// On cancel of ctx it returns ctx.Err() at once; the blocking read it issued
// then finishes on its own connection within block, so keep block short
// (seconds) when callers may go away.
func (s *Store) WaitEvents(ctx context.Context, runID, afterID string, block time.Duration) ([]pipeline.Event, error) {
	if block <= 0 {
		return s.Events(ctx, runID, afterID, 0)
	}
	if afterID == "" {
		afterID = "0-0"
	}
	if block < time.Millisecond {
		block = time.Millisecond // XREAD BLOCK 0 would mean forever
	}
	type result struct {
		streams []redis.XStream
		err     error
	}
	done := make(chan result, 1)
	go func() {
		// Not ctx: go-redis does not abort a blocking read on cancel, and a
		// cancelled ctx must not poison the pooled connection mid-read.
		streams, err := s.wait.XRead(context.WithoutCancel(ctx), &redis.XReadArgs{
			Streams: []string{s.eventsKey(runID), afterID},
			Block:   block,
		}).Result()
		done <- result{streams, err}
	}()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-done:
		if errors.Is(r.err, redis.Nil) {
			return []pipeline.Event{}, nil
		}
		if r.err != nil {
			return nil, fmt.Errorf("wait for events of run %s after %q: %w", runID, afterID, r.err)
		}
		var msgs []redis.XMessage
		for _, st := range r.streams {
			msgs = append(msgs, st.Messages...)
		}
		return s.decodeEvents(ctx, runID, msgs)
	}
}

// decodeEvents reads the run's stream entries msgs as events, with what
// they keep elsewhere joined back (refs.go).
func (s *Store) decodeEvents(ctx context.Context, runID string, msgs []redis.XMessage) ([]pipeline.Event, error) {
	out := make([]pipeline.Event, len(msgs))
	refs := make([]string, len(msgs))
	for i, m := range msgs {
		ev, err := decodeEntry(runID, m)
		if err != nil {
			return nil, err
		}
		out[i] = ev
		refs[i], _ = m.Values["ref"].(string)
	}
	return out, s.joinRefs(ctx, runID, out, refs)
}
