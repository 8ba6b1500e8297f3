package config

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Park returns the parking of a call of this tool suspended at now: its
// ticket, the reason, the tool's resume mode (the decision of a frontend
// tool, or of an agent tool's child run, is always its result), when it
// parked (now), the approval deadline when the tool sets one and, for an
// agent tool, the child run it waits for. The store fills in the hash of
// the arguments.
func (t Tool) Park(runID, callID, reason string, now time.Time) *pipeline.Parking {
	mode := pipeline.ResumeMode(t.ResumeMode)
	if t.Executor.Frontend != nil || t.Executor.Agent != "" {
		mode = pipeline.ResumeUseDecisionAsResult
	}
	p := &pipeline.Parking{Ticket: Ticket(runID, callID), Reason: reason, ResumeMode: mode, OnTimeout: t.OnTimeout, ParkedAt: now}
	if t.Executor.Agent != "" {
		p.ChildRunID = pipeline.ChildRunID(runID, callID)
	}
	if t.ApprovalTimeout.Duration > 0 {
		p.Deadline = now.Add(t.ApprovalTimeout.Duration)
	}
	return p
}

// Ticket names the approval of one call: stable for the call, opaque, short.
func Ticket(runID, callID string) string {
	sum := sha256.Sum256([]byte(runID + "\x00" + callID))
	return "tkt_" + hex.EncodeToString(sum[:10])
}
