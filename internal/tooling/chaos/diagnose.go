package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// keyPrefix is the prefix of stepwise's Redis keys (the store's default).
// The harness reads Redis only to describe a stuck run: the state the
// public API does not show (step_state, the lease, the sweeper's schedule).
const keyPrefix = "sw"

// stuckState describes a run that did not end: what the API shows, what
// Redis holds about its step, and how its event log ends.
type stuckState struct {
	Late       bool     `json:"late,omitempty"` // done, but only after the settle limit
	Status     string   `json:"status"`
	Step       int      `json:"step"`
	Partition  int      `json:"partition"` // of the run's records, in every topic (all have the same partition count)
	StepState  string   `json:"step_state"`
	Calls      []string `json:"calls"` // "call_id tool status" of the current step; an open call with its claims and lease
	Attempts   string   `json:"attempts,omitempty"`
	LeaseOwner string   `json:"lease_owner,omitempty"`
	LeaseIn    string   `json:"lease_expires_in,omitempty"` // negative: expired
	ActiveDue  string   `json:"sweeper_due_in"`             // "absent": not in the sweeper's set
	LastEvents []string `json:"last_events"`
}

// key is the stuck state without the run-specific parts, for the report's
// histogram.
func (s stuckState) key() string {
	if s.Late {
		return "ended after the settle limit"
	}
	var calls []string
	for _, c := range s.Calls {
		f := strings.Fields(c)
		calls = append(calls, f[2])
	}
	active := "in sweeper set"
	if s.ActiveDue == "absent" {
		active = "not in sweeper set"
	}
	return fmt.Sprintf("status=%s step_state=%s calls=[%s] %s", s.Status, s.StepState, strings.Join(calls, " "), active)
}

func (s stuckState) String() string {
	return fmt.Sprintf("%s partition=%d step=%d attempts=%s lease_owner=%q lease_expires_in=%s sweeper_due_in=%s calls=[%s] last_events=[%s]",
		s.key(), s.Partition, s.Step, s.Attempts, s.LeaseOwner, s.LeaseIn, s.ActiveDue, strings.Join(s.Calls, ", "), strings.Join(s.LastEvents, " "))
}

// diagnose reads what describes a stuck run.
func diagnose(ctx context.Context, rdb *redis.Client, v runView, evs []event, partitions int) stuckState {
	s := stuckState{Status: v.Status, Step: v.Step, Partition: partitionOf(v.RunID, partitions)}
	now := time.Now()
	for _, c := range v.ToolCalls {
		if c.Step != v.Step {
			continue
		}
		desc := fmt.Sprintf("%s %s %s", c.CallID, c.Tool, c.Status)
		if c.Status == "new" || c.Status == "running" || c.Status == "resuming" {
			h, err := rdb.HGetAll(ctx, keyPrefix+":{"+v.RunID+"}:call:"+c.CallID).Result()
			if err == nil {
				desc += " (claims=" + h["attempts"]
				if h["lease_owner"] != "" {
					desc += " lease_owner=" + h["lease_owner"]
				}
				if ms, err := strconv.ParseInt(h["lease_until"], 10, 64); err == nil && ms > 0 {
					desc += " lease_expires_in=" + time.UnixMilli(ms).Sub(now).Round(time.Millisecond).String()
				}
				desc += ")"
			}
		}
		s.Calls = append(s.Calls, desc)
	}
	h, err := rdb.HGetAll(ctx, keyPrefix+":{"+v.RunID+"}:run").Result()
	if err != nil {
		s.StepState = "unreadable: " + err.Error()
	} else {
		s.StepState, s.Attempts, s.LeaseOwner = h["step_state"], h["attempts"], h["lease_owner"]
		if ms, err := strconv.ParseInt(h["lease_until"], 10, 64); err == nil && ms > 0 {
			s.LeaseIn = time.UnixMilli(ms).Sub(now).Round(time.Millisecond).String()
		}
	}
	score, err := rdb.ZScore(ctx, keyPrefix+":active", v.RunID).Result()
	switch {
	case errors.Is(err, redis.Nil):
		s.ActiveDue = "absent"
	case err != nil:
		s.ActiveDue = "unreadable: " + err.Error()
	default:
		s.ActiveDue = time.UnixMilli(int64(score)).Sub(now).Round(time.Millisecond).String()
	}
	for _, ev := range evs[max(0, len(evs)-6):] {
		t := ev.Type
		if ev.CallID != "" {
			t += "(" + ev.CallID + ")"
		} else {
			t += "(step " + strconv.Itoa(ev.Step) + ")"
		}
		s.LastEvents = append(s.LastEvents, t)
	}
	return s
}
