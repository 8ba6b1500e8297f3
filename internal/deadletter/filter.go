package deadletter

import (
	"fmt"
	"time"

	"github.com/stepwise-run/stepwise/topics"
)

// Filter picks dead-letter records. The zero value picks every record.
type Filter struct {
	// Topic keeps only records consumed from this topic, named in full
	// ("stepwise.tool-results") or without the topic prefix
	// ("tool-results", "tool-calls.payments"); "" keeps any.
	Topic string
	// Since keeps only records dead-lettered within this long before now;
	// 0 keeps any age.
	Since time.Duration
}

// Validate reports a filter that can pick nothing by construction.
func (f Filter) Validate() error {
	if f.Since < 0 {
		return fmt.Errorf("since is %v, want a positive duration", f.Since)
	}
	return nil
}

// skip reports why f leaves r out, or "" when f keeps it. names gives the
// prefix a short topic name is completed with; now is when Since counts
// back from.
func (f Filter) skip(r Record, names topics.Names, now time.Time) SkipReason {
	if f.Topic != "" && r.Topic != f.Topic && r.Topic != names.Prefix()+f.Topic {
		return SkipOtherTopic
	}
	if f.Since > 0 && r.Time.Before(now.Add(-f.Since)) {
		return SkipTooOld
	}
	return ""
}
