package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Threads: a chat frontend's conversation is a thread of runs, one run per
// turn (a user message and everything the agent does about it). A run that
// ended stays ended; the next user message starts the next turn's run with
// the last one's conversation as its input. Turn k of thread T is the run
// ThreadRunID(T, k). ADR 0014.
//
//	<p>:thread:{<thread>}   STRING  the highest turn known to have a run: a hint
//	                                for ThreadHead, which probes past it

// ThreadRunID is the run id of turn `turn` (from 1) of thread: the
// thread's own id for the first turn, "<thread>~<turn>" after it. "~" is
// outside what a client may choose as a run id, so no chosen id collides.
func ThreadRunID(thread string, turn int) string {
	if turn <= 1 {
		return thread
	}
	return thread + "~" + strconv.Itoa(turn)
}

func (s *Store) threadKey(thread string) string { return s.prefix + ":thread:{" + thread + "}" }

// ThreadHead returns the latest turn of thread that has a run, 0 when none
// has. It starts at the hint SetThreadHead left and probes the turns after
// it, so a writer that died between creating a turn's run and moving the
// hint loses nothing.
func (s *Store) ThreadHead(ctx context.Context, thread string) (int, error) {
	turn, err := s.rdb.Get(ctx, s.threadKey(thread)).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("head of thread %s: %w", thread, err)
	}
	turn = max(turn, 1)
	for ; ; turn++ {
		n, err := s.rdb.Exists(ctx, s.runKey(ThreadRunID(thread, turn))).Result()
		if err != nil {
			return 0, fmt.Errorf("head of thread %s: %w", thread, err)
		}
		if n == 0 {
			return turn - 1, nil
		}
	}
}

// SetThreadHead records that turn `turn` of thread has a run. The hint
// outlives the runs it points at (twice runs.retention), so a thread is
// forgotten with its runs and not before.
func (s *Store) SetThreadHead(ctx context.Context, thread string, turn int) error {
	if err := s.rdb.Set(ctx, s.threadKey(thread), turn, 2*s.retention).Err(); err != nil {
		return fmt.Errorf("set head of thread %s to %d: %w", thread, turn, err)
	}
	return nil
}
