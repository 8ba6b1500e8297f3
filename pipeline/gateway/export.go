package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// ArchiveOf is run's archive record (runs.archive, ADR 0070): the run as
// GET /v1/runs/{id} shows it, its messages and its whole event log, read
// from st. It returns the view too, whose calls name the run's call keys.
func ArchiveOf(ctx context.Context, st *store.Store, run pipeline.Run) (topics.RunArchived, RunView, error) {
	view, err := viewOf(ctx, st, run)
	if err != nil {
		return topics.RunArchived{}, RunView{}, err
	}
	raw, err := json.Marshal(view)
	if err != nil {
		return topics.RunArchived{}, RunView{}, fmt.Errorf("encode run %s: %w", run.ID, err)
	}
	msgs, err := st.Messages(ctx, run.ID)
	if err != nil {
		return topics.RunArchived{}, RunView{}, err
	}
	rec := topics.RunArchived{Header: topics.Header{V: topics.SchemaVersion, RunID: run.ID}, Run: raw, Messages: msgs, Events: []pipeline.Event{}}
	for after := ""; ; {
		events, err := st.Events(ctx, run.ID, after, eventPage)
		if err != nil {
			return topics.RunArchived{}, RunView{}, err
		}
		rec.Events = append(rec.Events, events...)
		if len(events) < eventPage {
			return rec, view, nil
		}
		after = events[len(events)-1].ID
	}
}

// exportRuns serves GET /v1/export/runs?status=&agent=&termination=&batch_id=&since=&until=
// (parseFilter): the archive record (ArchiveOf) of every run of the
// caller's tenant the filter selects, newest first, one JSON object a
// line. A run that expires while the export runs is left out. An error
// once the answer has begun aborts it, so that a client never takes a
// cut export for a whole one.
func (s *Server) exportRuns(w http.ResponseWriter, r *http.Request) {
	f, problems := parseFilter(r.URL.Query().Get)
	if len(problems) > 0 {
		writeError(w, invalidAll("invalid query", problems))
		return
	}
	f.Tenant, f.Limit = tenantFilter(r), MaxListLimit
	out := &jsonLines{w: w, enc: json.NewEncoder(w)}
	for {
		runs, next, err := s.cfg.Store.ListRuns(r.Context(), f)
		if err == nil {
			err = s.exportPage(r.Context(), out, runs)
		}
		switch {
		case err != nil && !out.started:
			s.fail(w, r, "export runs", err)
			return
		case err != nil:
			s.log.Error("export runs: aborted", "error", err)
			panic(http.ErrAbortHandler)
		case next == "":
			out.start()
			return
		}
		f.Cursor = next
	}
}

// exportPage writes the archive records of runs to out and flushes them.
func (s *Server) exportPage(ctx context.Context, out *jsonLines, runs []pipeline.Run) error {
	for _, run := range runs {
		rec, _, err := ArchiveOf(ctx, s.cfg.Store, run)
		if errors.Is(err, store.ErrNotFound) {
			continue // expired since it was listed
		}
		if err != nil {
			return err
		}
		if err := out.write(rec); err != nil {
			return err
		}
	}
	return out.flush()
}

// jsonLines is a 200 answer of JSON Lines, begun at its first line.
type jsonLines struct {
	w       http.ResponseWriter
	enc     *json.Encoder
	started bool
}

// start writes the answer's header, once.
func (j *jsonLines) start() {
	if !j.started {
		j.w.Header().Set("Content-Type", mediaJSONL)
		j.w.WriteHeader(http.StatusOK)
		j.started = true
	}
}

// write writes v as one line.
func (j *jsonLines) write(v any) error {
	j.start()
	return j.enc.Encode(v)
}

// flush sends the lines written so far.
func (j *jsonLines) flush() error {
	if !j.started {
		return nil
	}
	return http.NewResponseController(j.w).Flush()
}
