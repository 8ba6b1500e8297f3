package schedule

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Schedule is a schedule's record as the store keeps it.
type Schedule struct {
	ID     string
	Tenant string
	Spec   Spec
	Run    Template
	Paused bool
	// Next is the next tick not yet taken; Buffered the tick buffer_one
	// keeps waiting for the last run (zero: none); LastRun the id of the
	// last run it started ("" before the first).
	Next     time.Time
	Buffered time.Time
	LastRun  string
	// Firing are the runs of ticks taken but maybe not yet created: the
	// look that took them creates them, then clears them; if it dies
	// between the two, the next look creates them (their ids make the
	// create idempotent).
	Firing    []Firing
	CreatedAt time.Time
	UpdatedAt time.Time
	// Rev counts the record's writes: a write names the revision it read
	// and is refused when another came between.
	Rev int64
}

// Template is the run a tick starts: a POST /v1/runs body, validated,
// without run_id and start_at.
type Template struct {
	Agent       string             `json:"agent"`
	Input       []pipeline.Message `json:"input"`
	Model       json.RawMessage    `json:"model,omitempty"`
	Metadata    json.RawMessage    `json:"metadata,omitempty"`
	RequestHash string             `json:"request_hash"`
}

// Firing is a tick taken: the run it starts.
type Firing struct {
	RunID string    `json:"run_id"`
	Tick  time.Time `json:"tick"`
}

// LookAt is when the sweepers look at sc next, at now: at once with a
// firing to complete, after poll with a tick waiting for the last run,
// else at its next tick; never (the zero time) while it is paused with
// nothing to complete.
func (sc Schedule) LookAt(now time.Time, poll time.Duration) time.Time {
	switch {
	case len(sc.Firing) > 0:
		return now
	case sc.Paused:
		return time.Time{}
	case !sc.Buffered.IsZero():
		return now.Add(poll)
	}
	return sc.Next
}

// FiringOf is the firing of tick of schedule id: its run is
// "<id>-<tick in unix seconds>", or "<id>-now-<unix ms>" for a trigger
// (a tick of no timer).
func FiringOf(id string, tick time.Time, trigger bool) Firing {
	if trigger {
		return Firing{RunID: fmt.Sprintf("%s-now-%d", id, tick.UnixMilli()), Tick: tick}
	}
	return Firing{RunID: fmt.Sprintf("%s-%d", id, tick.Unix()), Tick: tick}
}

// NewRun is the run f starts for sc, to create with its Template's input.
func (sc Schedule) NewRun(f Firing) pipeline.Run {
	return pipeline.Run{
		ID: f.RunID, Agent: sc.Run.Agent, Tenant: sc.Tenant, Model: sc.Run.Model, Metadata: sc.Run.Metadata,
		RequestHash: sc.Run.RequestHash, ScheduleID: sc.ID, TickAt: f.Tick,
	}
}
