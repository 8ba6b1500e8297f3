package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// ApprovalLimit is the largest refund the demo's approver resumes; larger
// ones it cancels.
const ApprovalLimit = 1000

// approve plays the outside system that decides: it polls GET /v1/pending
// and posts a decision for each parked call — resume up to ApprovalLimit,
// cancel above it — until ctx ends. It returns how many it decided.
func approve(ctx context.Context, c client) int {
	decided := map[string]bool{}
	for {
		var pending struct {
			Pending []struct {
				RunID     string          `json:"run_id"`
				CallID    string          `json:"call_id"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"pending"`
		}
		if err := c.get(ctx, "/v1/pending?limit=1000", &pending); err == nil {
			for _, p := range pending.Pending {
				key := p.RunID + "/" + p.CallID
				if decided[key] {
					continue
				}
				var args struct {
					Amount float64 `json:"amount"`
				}
				_ = json.Unmarshal(p.Arguments, &args)
				d := map[string]any{"decision_id": "demo-" + key, "call_id": p.CallID, "action": "resume", "decided_by": "demo-approver"}
				if args.Amount > ApprovalLimit {
					d["action"], d["reason"] = "cancel", fmt.Sprintf("refunds over %d need a manager", ApprovalLimit)
				}
				if c.post(ctx, "/v1/runs/"+p.RunID+"/decisions", d) == nil {
					decided[key] = true
				}
			}
		}
		select {
		case <-ctx.Done():
			return len(decided)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
