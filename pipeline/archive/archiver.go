package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// Archiver archives ended runs where runs.archive says.
type Archiver struct {
	store *store.Store
	sink  sink
}

// sink is where an Archiver writes records.
type sink interface {
	write(rec topics.RunArchived) error
}

// Deps are what New needs besides the setting: Process names this process
// in file names, Now is the clock of the files' days.
type Deps struct {
	Store     *store.Store
	Publisher topics.Publisher
	Names     topics.Names
	Process   string
	Now       func() time.Time
	Logger    *slog.Logger
}

// New returns the Archiver of setting, nil when it archives nothing. A
// directory that cannot be made is an error.
func New(setting config.Archive, d Deps) (*Archiver, error) {
	switch setting.To {
	case "":
		return nil, nil
	case config.ArchiveToTopic:
		return &Archiver{store: d.Store, sink: &topicSink{pub: d.Publisher, topic: d.Names.RunArchive(), log: d.Logger}}, nil
	case config.ArchiveToFiles:
		f, err := newFiles(setting.Dir, d.Process, d.Now)
		if err != nil {
			return nil, err
		}
		return &Archiver{store: d.Store, sink: f}, nil
	}
	return nil, fmt.Errorf("archive: runs.archive.to %q: want %s or %s", setting.To, config.ArchiveToTopic, config.ArchiveToFiles)
}

// Archive writes the record of the run, which is done, as it is now, and
// then starts its retention (store.Archived). A run that is gone has
// nothing left to archive. An error leaves the run as it was: archiving
// it again is harmless.
func (a *Archiver) Archive(ctx context.Context, runID string) error {
	run, err := a.store.GetRun(ctx, runID)
	var rec topics.RunArchived
	var view gateway.RunView
	if err == nil {
		rec, view, err = gateway.ArchiveOf(ctx, a.store, run)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("archive run %s: %w", runID, err)
	}
	if err := a.sink.write(rec); err != nil {
		return fmt.Errorf("archive run %s: %w", runID, err)
	}
	ids := make([]string, len(view.ToolCalls))
	for i, c := range view.ToolCalls {
		ids[i] = c.CallID
	}
	return a.store.Archived(ctx, runID, ids)
}
