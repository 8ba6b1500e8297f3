package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// History is a run's conversation with, for each step that committed its
// assistant message, where that message is in it: what a fork copies and a
// re-run starts from.
type History struct {
	Messages []pipeline.Message
	Turns    map[int]int // step → index in Messages of the step's assistant message
}

// Input is the conversation before the run's first assistant message: the
// input it was created with (a fork's copied history included).
func (h History) Input() []pipeline.Message {
	first := len(h.Messages)
	for _, at := range h.Turns {
		first = min(first, at)
	}
	return h.Messages[:first]
}

// History reads the run's conversation and the message.assistant events
// of its steps (whose data says where each step's message is), in one
// round trip. An unknown run is ErrNotFound.
func (s *Store) History(ctx context.Context, runID string) (History, error) {
	var exists *redis.IntCmd
	var list *redis.StringSliceCmd
	var evs *redis.XMessageSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		exists = p.Exists(ctx, s.runKey(runID))
		list = p.LRange(ctx, s.msgsKey(runID), 0, -1)
		evs = p.XRange(ctx, s.eventsKey(runID), "-", "+")
		return nil
	})
	if err != nil {
		return History{}, fmt.Errorf("history of run %s: %w", runID, err)
	}
	if exists.Val() == 0 {
		return History{}, fmt.Errorf("%w: run %s", ErrNotFound, runID)
	}
	msgs, err := decodeMessages(runID, list.Val())
	if err != nil {
		return History{}, err
	}
	h := History{Messages: msgs, Turns: map[int]int{}}
	for _, m := range evs.Val() {
		ev, err := decodeEntry(runID, m)
		if err != nil {
			return History{}, err
		}
		if ev.Type != pipeline.EventAssistantMessage {
			continue
		}
		var at struct {
			MessageAt *int `json:"message_at"`
		}
		if err := json.Unmarshal(ev.Data, &at); err != nil || at.MessageAt == nil || *at.MessageAt >= len(msgs) {
			return History{}, fmt.Errorf("history of run %s: event %s names no message it holds: %s", runID, ev.ID, ev.Data)
		}
		h.Turns[ev.Step] = *at.MessageAt
	}
	return h, nil
}
