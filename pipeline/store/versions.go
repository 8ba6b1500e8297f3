package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// PutAgentVersion writes the definition of an agent version under its
// hash, unless one is there already (SET NX): a version's definition is
// written once, by whichever process first sees it, and never changes.
// The key has no expiry: runs pinned to a version may wait for a decision
// for as long as their approvals allow (package versions, ADR 0068).
func (s *Store) PutAgentVersion(ctx context.Context, hash string, definition []byte) error {
	if err := s.rdb.SetNX(ctx, s.agentVersionKey(hash), definition, 0).Err(); err != nil {
		return fmt.Errorf("put agent version %s: %w", hash, err)
	}
	return nil
}

// AgentVersion reads the definition PutAgentVersion wrote under hash;
// ErrNotFound when there is none.
func (s *Store) AgentVersion(ctx context.Context, hash string) ([]byte, error) {
	b, err := s.rdb.Get(ctx, s.agentVersionKey(hash)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: agent version %s", ErrNotFound, hash)
	}
	if err != nil {
		return nil, fmt.Errorf("get agent version %s: %w", hash, err)
	}
	return b, nil
}
