package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
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

// VersionRuns is how many live runs (not done) of an agent are pinned to
// one of its versions ("" for runs created before versions existed).
type VersionRuns struct {
	Agent   string `json:"agent"`
	Version string `json:"version"`
	Runs    int    `json:"active_runs"`
}

// LiveVersions counts the live runs that are not done by the agent that
// holds them and the version they are pinned to, sorted by agent and
// version. It reads at most limit runs of the live index (oldest first,
// one pipelined read of each: a count made when asked, nothing kept to
// drift); truncated reports that there were more.
func (s *Store) LiveVersions(ctx context.Context, limit int) (_ []VersionRuns, truncated bool, _ error) {
	ids, truncated, err := s.liveRuns(ctx, limit)
	if err != nil {
		return nil, false, fmt.Errorf("count runs by version: %w", err)
	}
	cmds := make([]*redis.SliceCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HMGet(ctx, s.runKey(id), "agent", "holder", "agent_ver", "status")
		}
		return nil
	}); err != nil {
		return nil, false, fmt.Errorf("count runs by version: %w", err)
	}
	counts := map[VersionRuns]int{}
	for _, c := range cmds {
		v := c.Val()
		agent, _ := v[0].(string)
		holder, _ := v[1].(string)
		ver, _ := v[2].(string)
		status, _ := v[3].(string)
		if status == "" || pipeline.RunStatus(status).Final() { // retired meanwhile, or ended
			continue
		}
		counts[VersionRuns{Agent: cmp.Or(holder, agent), Version: ver}]++
	}
	out := make([]VersionRuns, 0, len(counts))
	for k, n := range counts {
		k.Runs = n
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b VersionRuns) int {
		return cmp.Or(cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Version, b.Version))
	})
	return out, truncated, nil
}

// UpgradeWaiting moves every waiting run held by agent that is pinned to
// another version to version (an operator's explicit upgrade; ADR 0068),
// each by one script that checks it still waits and is still held by agent
// (upgrade_run.lua; event run.upgraded {"from", "to"}). It looks at most
// at limit live runs (truncated: there were more) and returns how many it
// moved. A run's next steps, and the decisions that wake it, use version.
func (s *Store) UpgradeWaiting(ctx context.Context, agent, version string, limit int, now time.Time) (moved int, truncated bool, _ error) {
	if version == "" {
		return 0, false, fmt.Errorf("%w: upgrade the runs of %s to no version", ErrInvalid, agent)
	}
	ev, err := newEntry(-1, "", pipeline.EventRunUpgraded, now, nil)
	if err != nil {
		return 0, false, err
	}
	ids, truncated, err := s.liveRuns(ctx, limit)
	if err != nil {
		return 0, false, fmt.Errorf("upgrade the waiting runs of %s: %w", agent, err)
	}
	for _, id := range ids {
		v, err := s.call(ctx, s.scripts.upgradeRun, "upgrade run "+id, []string{s.runKey(id), s.eventsKey(id)}, struct {
			Agent   string             `json:"agent"`
			Waiting pipeline.RunStatus `json:"waiting"`
			Version string             `json:"version"`
			Event   entry              `json:"event"`
		}{agent, pipeline.RunWaiting, version, ev})
		if err != nil {
			return moved, truncated, err
		}
		if n, _ := v.(int64); n == 1 {
			moved++
		}
	}
	return moved, truncated, nil
}

// liveRuns returns the ids of the oldest live runs, at most limit;
// truncated: there were more.
func (s *Store) liveRuns(ctx context.Context, limit int) (_ []string, truncated bool, _ error) {
	if err := s.listLiveOnce(ctx); err != nil {
		return nil, false, err
	}
	ids, err := s.rdb.ZRange(ctx, s.liveKey(), 0, int64(limit)).Result()
	if err != nil {
		return nil, false, err
	}
	if len(ids) > limit {
		return ids[:limit], true, nil
	}
	return ids, false, nil
}
