package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// History is a run's conversation with, for each step that committed its
// assistant message, where that message is in it, and the handoffs of its
// steps: what a fork copies and a re-run starts from.
type History struct {
	Messages []pipeline.Message
	Turns    map[int]int    // step → index in Messages of the step's assistant message
	Handoffs map[int]string // step → the agent its commit handed the run to
}

// HolderAfter is the agent that held the run once step was committed: the
// one the latest handoff at step or before handed it to, or agent, the
// run's own, when none did.
func (h History) HolderAfter(step int, agent string) string {
	latest := -1
	for s, to := range h.Handoffs {
		if s <= step && s > latest {
			latest, agent = s, to
		}
	}
	return agent
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

// History reads the run's conversation and the message.assistant and
// run.handoff events of its steps (whose data says where each step's
// message is, and whom it handed the run to), in one round trip. An unknown run is ErrNotFound.
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
	h := History{Messages: msgs, Turns: map[int]int{}, Handoffs: map[int]string{}}
	for _, m := range evs.Val() {
		ev, err := decodeEntry(runID, m)
		if err != nil {
			return History{}, err
		}
		if ev.Type == pipeline.EventRunHandoff {
			var d struct {
				To string `json:"to"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil || d.To == "" {
				return History{}, fmt.Errorf("history of run %s: handoff event %s names no agent: %s", runID, ev.ID, ev.Data)
			}
			h.Handoffs[ev.Step] = d.To
			continue
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
