package archive_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/archive"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// doneRun creates run id on st and ends it.
func doneRun(t *testing.T, st *store.Store, id string) {
	t.Helper()
	ctx, now := context.Background(), time.Now()
	input := []pipeline.Message{{Role: pipeline.RoleUser, Content: "hello"}}
	if _, _, err := st.CreateRun(ctx, pipeline.Run{ID: id, Agent: "assistant"}, input, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishRun(ctx, id, pipeline.Termination{Reason: pipeline.ReasonCancelled}, now); err != nil {
		t.Fatal(err)
	}
}

func TestFiles_one_file_a_day_and_process_one_line_a_record(t *testing.T) {
	st := store.New(testinfra.RedisClient(t), store.WithRetention(time.Hour), store.WithArchive())
	dir := filepath.Join(t.TempDir(), "made", "here")
	day := time.Date(2026, 11, 28, 23, 59, 0, 0, time.UTC)
	a, err := archive.New(config.Archive{To: config.ArchiveToFiles, Dir: dir}, archive.Deps{
		Store: st, Names: topics.NewNames(""), Process: "stepworker-1", Now: func() time.Time { return day },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"f1", "f2", "f3"} {
		doneRun(t, st, id)
	}
	for _, id := range []string{"f1", "f2"} {
		if err := a.Archive(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	day = day.Add(2 * time.Minute) // the next day, UTC
	if err := a.Archive(ctx, "f3"); err != nil {
		t.Fatal(err)
	}
	if err := a.Archive(ctx, "gone"); err != nil {
		t.Errorf("archive a run that is gone: %v, want nothing to do", err)
	}

	want := map[string][]string{
		archive.Name("2026-11-28", "stepworker-1"): {"f1", "f2"},
		archive.Name("2026-11-29", "stepworker-1"): {"f3"},
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != len(want) {
		t.Fatalf("files %v (%v), want %d", entries, err, len(want))
	}
	for name, ids := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			rec, err := topics.Decode[topics.RunArchived]([]byte(line))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got = append(got, rec.RunID)
		}
		if !slices.Equal(got, ids) {
			t.Errorf("%s holds %v, want %v", name, got, ids)
		}
	}
}

func TestNew_refuses_a_directory_it_cannot_make(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := archive.New(config.Archive{To: config.ArchiveToFiles, Dir: filepath.Join(file, "dir")}, archive.Deps{Process: "p"})
	if err == nil || !strings.Contains(err.Error(), "runs.archive.dir") {
		t.Fatalf("New = %v, want an error naming runs.archive.dir", err)
	}
}

// smallBroker refuses, as too large, a record over limit bytes, and keeps
// the others.
type smallBroker struct {
	limit int
	kept  []*message.Message
}

func (b *smallBroker) Publish(_ string, msgs ...*message.Message) error {
	for _, m := range msgs {
		if len(m.Payload) > b.limit {
			return fmt.Errorf("%d bytes: %w", len(m.Payload), topics.ErrTooLarge)
		}
		b.kept = append(b.kept, m)
	}
	return nil
}

func TestTopic_a_record_too_large_goes_out_without_its_messages_and_events(t *testing.T) {
	st := store.New(testinfra.RedisClient(t), store.WithRetention(time.Hour), store.WithArchive())
	broker := &smallBroker{limit: 500}
	a, err := archive.New(config.Archive{To: config.ArchiveToTopic}, archive.Deps{
		Store: st, Publisher: broker, Names: topics.NewNames(""), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	doneRun(t, st, "big")
	if err := a.Archive(context.Background(), "big"); err != nil {
		t.Fatal(err)
	}
	if len(broker.kept) != 1 {
		t.Fatalf("%d records published, want 1", len(broker.kept))
	}
	rec, err := topics.Decode[topics.RunArchived](broker.kept[0].Payload)
	if err != nil || rec.RunID != "big" || !rec.Omitted || rec.Messages != nil || rec.Events != nil {
		t.Fatalf("published %+v (%v), want run big without messages and events, omitted", rec, err)
	}
}
