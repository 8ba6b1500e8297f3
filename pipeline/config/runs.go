package config

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// DefaultRetention is how long an ended run is kept when runs.retention is
// not set.
const DefaultRetention = 7 * 24 * time.Hour

// MinRetention is the shortest retention other than 0: a run's result must
// be published before its keys expire (docs/configuration.md#runs).
const MinRetention = time.Second

// DefaultMaxScriptDelay is runs.max_script_delay when it is not set.
const DefaultMaxScriptDelay = 10 * time.Second

// Defaults of runs.children.
const (
	DefaultMaxChildDepth     = 3
	DefaultMaxChildrenPerRun = 100
)

// Children bounds the child runs agent tools start (runs.children, ADR
// 0060): a call over either bound fails with an error saying which, and
// no child starts.
type Children struct {
	// MaxDepth is how deep a child may be: a run started by hand is at 0,
	// its child at 1, ...; default 3.
	MaxDepth int `json:"max_depth,omitempty"`
	// MaxPerRun is how many child runs one run may start in all; default
	// 100.
	MaxPerRun int `json:"max_per_run,omitempty"`
}

// Runs holds what applies to every run (yaml key "runs").
type Runs struct {
	// Retention is how long an ended run — its record, messages, calls,
	// event stream, held decisions — is kept in Redis after it ends;
	// default 168h (7 days). 0 keeps ended runs for good. The step workers
	// apply it when a run ends; a change applies to runs that end after it.
	Retention *Duration `json:"retention,omitempty"`
	// MaxScriptDelay caps how long one turn of a script model a run brings
	// (POST /v1/runs "model") may hold its answer back: its delay_ms and
	// its stream_ms times its words, together; default 10s. A create over
	// it is refused with 400, and a run that has one anyway (created before
	// the cap was lowered) ends with error at that step. The script models
	// of the configuration's agents are the operator's and are not capped.
	// ADR 0048.
	MaxScriptDelay Duration `json:"max_script_delay,omitzero"`
	// Children bounds child runs (tools with an agent executor).
	Children Children `json:"children,omitzero"`
	// MaxHandoffs is how many times one run may be handed from an agent to
	// another (agents' handoffs); default 10. A handoff past it is
	// refused: its call fails with an error the model reads, and the run
	// stays with the agent that holds it. ADR 0061.
	MaxHandoffs int `json:"max_handoffs,omitempty"`
	// SearchableMetadata names the metadata keys runs are indexed by, so
	// that GET /v1/runs?meta.KEY=VALUE finds them (default none; at most
	// MaxSearchableMetadata, each at most 64 bytes, without "="). A key
	// declared later finds the runs created before too: the first search
	// adds them, once. ADR 0069.
	SearchableMetadata []string `json:"searchable_metadata,omitempty"`
	// Archive writes each ended run's record to a topic or to files
	// before the retention may delete it; unset, none is archived.
	Archive Archive `json:"archive,omitzero"`
	// UpgradeWaiting moves a waiting run to the current version of its
	// agent when a resume decision wakes it: the decision is checked
	// against that version and the run's next steps use it. Default false:
	// a run finishes on the version it was created with, whatever the
	// configuration says since (ADR 0068).
	UpgradeWaiting bool `json:"upgrade_waiting,omitempty"`
}

// MaxSearchableMetadata is how many metadata keys runs.searchable_metadata
// may name: each is an index written at every run's creation.
const MaxSearchableMetadata = 16

// KeepFor returns the retention with the default applied: how long an
// ended run's keys live, 0 for good.
func (r Runs) KeepFor() time.Duration {
	if r.Retention == nil {
		return DefaultRetention
	}
	return r.Retention.Duration
}

func (r *Runs) setDefaults() {
	if r.Retention == nil {
		d := D(DefaultRetention)
		r.Retention = &d
	}
	if r.MaxScriptDelay.Duration == 0 {
		r.MaxScriptDelay = D(DefaultMaxScriptDelay)
	}
	if r.Children.MaxDepth == 0 {
		r.Children.MaxDepth = DefaultMaxChildDepth
	}
	if r.Children.MaxPerRun == 0 {
		r.Children.MaxPerRun = DefaultMaxChildrenPerRun
	}
	if r.MaxHandoffs == 0 {
		r.MaxHandoffs = DefaultMaxHandoffs
	}
}

func (r Runs) check(ps *problems, path string) {
	if d := r.KeepFor(); d < 0 || (d > 0 && d < MinRetention) {
		ps.add(field(path, "retention"), fmt.Sprintf("%s: want 0 (keep for good) or at least %s", d, MinRetention))
	}
	nonNegativeDuration(ps, field(path, "max_script_delay"), r.MaxScriptDelay)
	nonNegative(ps, field(field(path, "children"), "max_depth"), int64(r.Children.MaxDepth))
	nonNegative(ps, field(field(path, "children"), "max_per_run"), int64(r.Children.MaxPerRun))
	nonNegative(ps, field(path, "max_handoffs"), int64(r.MaxHandoffs))
	if n := len(r.SearchableMetadata); n > MaxSearchableMetadata {
		ps.add(field(path, "searchable_metadata"), fmt.Sprintf("%d keys: at most %d", n, MaxSearchableMetadata))
	}
	for i, k := range r.SearchableMetadata {
		switch {
		case k == "" || len(k) > 64 || strings.Contains(k, "="):
			ps.add(fmt.Sprintf("%s[%d]", field(path, "searchable_metadata"), i), fmt.Sprintf("%q: want 1 to 64 bytes without \"=\"", k))
		case slices.Contains(r.SearchableMetadata[:i], k):
			ps.add(fmt.Sprintf("%s[%d]", field(path, "searchable_metadata"), i), fmt.Sprintf("%q is named twice", k))
		}
	}
	r.Archive.check(ps, field(path, "archive"))
}
