package topics

import (
	"encoding/json"
	"errors"

	"github.com/stepwise-run/stepwise/pipeline"
)

// RunArchived is an ended run's archive record (runs.archive, ADR 0070):
// the run as GET /v1/runs/{id} shows it, its conversation and its event
// log, written before the retention may delete the run. It is written at
// least once per run (again after a crash before the run's deletion was
// scheduled): keep the last per run_id, as the compacted topic does.
// Topic: run-archive; the same records, one per line, in archive files
// and in GET /v1/runs/export. A record too large for the broker goes out
// without its messages and events, Omitted set.
type RunArchived struct {
	Header
	Run      json.RawMessage    `json:"run"`
	Messages []pipeline.Message `json:"messages"`
	Events   []pipeline.Event   `json:"events"`
	// Omitted says the messages and events were left out to fit the
	// broker's message size limit.
	Omitted bool `json:"omitted,omitempty"`
}

// Validate reports every problem of the message at once.
func (m RunArchived) Validate() error {
	var errs []error
	errs = append(errs, m.check())
	if len(m.Run) == 0 || m.Run[0] != '{' {
		errs = append(errs, errors.New("run is missing"))
	}
	return errors.Join(errs...)
}
