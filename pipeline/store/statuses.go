package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// CallRef names one call of one run.
type CallRef struct {
	RunID, CallID string
}

// CallStatuses reads the status of each call of refs, in the order given,
// in one round trip ("" for a call that is not there). It is how a tool
// worker learns that a call it is executing was cancelled meanwhile (ADR
// 0065); RunStatuses is the same for runs.
func (s *Store) CallStatuses(ctx context.Context, refs []CallRef) ([]pipeline.ToolCallStatus, error) {
	cmds := make([]*redis.StringCmd, len(refs))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range refs {
			cmds[i] = p.HGet(ctx, s.callKey(r.RunID, r.CallID), "status")
		}
		return nil
	}) // each command's error is read below: a call not there is redis.Nil, not a failure
	out := make([]pipeline.ToolCallStatus, len(refs))
	for i, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("statuses of %d calls: %w", len(refs), err)
		}
		out[i] = pipeline.ToolCallStatus(c.Val())
	}
	return out, nil
}
