package config

import (
	"fmt"
	"time"
)

// StepWorker holds the settings of step workers (yaml key "stepworker").
type StepWorker struct {
	// Concurrency is how many steps (inference calls) one worker runs at
	// once; default 64. It is not bounded by the partition count.
	Concurrency int `json:"concurrency,omitempty"`
	// Lease is how long a claim on a step lasts unless renewed; default 30s.
	// A step whose lease expired is re-driven by the sweeper.
	Lease Duration `json:"lease,omitzero"`
	// MaxAttempts is how many times one step or one tool call may be claimed
	// before the run ends with reason error; default 3.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// SweepInterval is how often the sweeper looks for expired leases,
	// approval timeouts and stale dispatches; default 2s.
	SweepInterval Duration `json:"sweep_interval,omitzero"`
	// DispatchTimeout is how long a published but unclaimed step or tool call
	// may wait before it is published again; default 5m.
	DispatchTimeout Duration `json:"dispatch_timeout,omitzero"`
	// DecisionHold is how long a decision that arrives before its call is
	// parked is held for it; past it the decision is rejected. Default 2m.
	DecisionHold Duration `json:"decision_hold,omitzero"`
	// ShutdownGrace is how long a stopping worker (SIGTERM) lets the
	// inference in flight finish and commit after it stopped consuming;
	// what is still running then is abandoned and its leases released, so
	// another worker takes it over at once. Default 20s.
	ShutdownGrace Duration `json:"shutdown_grace,omitzero"`
}

// ToolWorker holds the settings of tool workers (yaml key "toolworker").
type ToolWorker struct {
	// Concurrency is how many tool calls one worker runs at once; default 64.
	Concurrency int `json:"concurrency,omitempty"`
	// Lease is how long a claim on a call lasts unless renewed; default 30s.
	Lease Duration `json:"lease,omitzero"`
	// DefaultTimeout bounds a call of a tool that sets no timeout; default 60s.
	DefaultTimeout Duration `json:"default_timeout,omitzero"`
	// Queues are the queues a tool worker consumes when --queues is not
	// given; empty means every queue of the configuration (Config.Queues).
	Queues []string `json:"queues,omitempty"`
	// ShutdownGrace is stepworker.shutdown_grace for tool executions;
	// default 20s.
	ShutdownGrace Duration `json:"shutdown_grace,omitzero"`
}

func (w *StepWorker) setDefaults() {
	if w.Concurrency == 0 {
		w.Concurrency = 64
	}
	if w.Lease.Duration == 0 {
		w.Lease = D(30 * time.Second)
	}
	if w.MaxAttempts == 0 {
		w.MaxAttempts = 3
	}
	if w.SweepInterval.Duration == 0 {
		w.SweepInterval = D(2 * time.Second)
	}
	if w.DispatchTimeout.Duration == 0 {
		w.DispatchTimeout = D(5 * time.Minute)
	}
	if w.DecisionHold.Duration == 0 {
		w.DecisionHold = D(2 * time.Minute)
	}
	if w.ShutdownGrace.Duration == 0 {
		w.ShutdownGrace = D(DefaultShutdownGrace)
	}
}

// DefaultShutdownGrace is the default of both workers' shutdown_grace.
const DefaultShutdownGrace = 20 * time.Second

func (w StepWorker) check(ps *problems, path string) {
	nonNegative(ps, field(path, "concurrency"), int64(w.Concurrency))
	nonNegativeDuration(ps, field(path, "lease"), w.Lease)
	nonNegative(ps, field(path, "max_attempts"), int64(w.MaxAttempts))
	nonNegativeDuration(ps, field(path, "sweep_interval"), w.SweepInterval)
	nonNegativeDuration(ps, field(path, "dispatch_timeout"), w.DispatchTimeout)
	nonNegativeDuration(ps, field(path, "decision_hold"), w.DecisionHold)
	nonNegativeDuration(ps, field(path, "shutdown_grace"), w.ShutdownGrace)
}

func (w *ToolWorker) setDefaults() {
	if w.Concurrency == 0 {
		w.Concurrency = 64
	}
	if w.Lease.Duration == 0 {
		w.Lease = D(30 * time.Second)
	}
	if w.DefaultTimeout.Duration == 0 {
		w.DefaultTimeout = D(60 * time.Second)
	}
	if w.ShutdownGrace.Duration == 0 {
		w.ShutdownGrace = D(DefaultShutdownGrace)
	}
}

func (w ToolWorker) check(ps *problems, path, prefix string) {
	nonNegative(ps, field(path, "concurrency"), int64(w.Concurrency))
	nonNegativeDuration(ps, field(path, "lease"), w.Lease)
	nonNegativeDuration(ps, field(path, "default_timeout"), w.DefaultTimeout)
	nonNegativeDuration(ps, field(path, "shutdown_grace"), w.ShutdownGrace)
	for i, q := range w.Queues {
		checkQueue(ps, fmt.Sprintf("%s[%d]", field(path, "queues"), i), q, prefix)
	}
}
