package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/topics"
)

// exported reads an export's JSON Lines answer.
func exported(t *testing.T, res response) []topics.RunArchived {
	t.Helper()
	if res.status != http.StatusOK {
		t.Fatalf("export: status %d: %s", res.status, res.body)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/jsonl" {
		t.Errorf("Content-Type %q, want application/jsonl", ct)
	}
	var out []topics.RunArchived
	sc := bufio.NewScanner(bytes.NewReader(res.body))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		rec, err := topics.Decode[topics.RunArchived](sc.Bytes())
		if err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

func runIDs(recs []topics.RunArchived) []string {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.RunID
	}
	slices.Sort(ids)
	return ids
}

func TestExport_writes_the_selected_runs_with_their_messages_and_events(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"e1", "e2", "e3"} {
		h.createRun(map[string]any{"run_id": id, "agent": "assistant", "input": "hello " + id})
	}
	if _, err := h.store.FinishRun(context.Background(), "e2", pipeline.Termination{Reason: pipeline.ReasonCancelled, Detail: "enough"}, time.Now()); err != nil {
		t.Fatal(err)
	}

	all := exported(t, h.get("/v1/export/runs"))
	if got := runIDs(all); !slices.Equal(got, []string{"e1", "e2", "e3"}) {
		t.Fatalf("exported %v, want e1, e2, e3", got)
	}
	done := exported(t, h.get("/v1/export/runs?status=done&termination=cancelled"))
	if len(done) != 1 || done[0].RunID != "e2" {
		t.Fatalf("exported %v, want e2 alone", runIDs(done))
	}
	rec := done[0]
	var view gateway.RunView
	if err := json.Unmarshal(rec.Run, &view); err != nil {
		t.Fatal(err)
	}
	if view.RunID != "e2" || view.Status != pipeline.RunDone || view.Termination == nil || view.Termination.Detail != "enough" {
		t.Errorf("run %+v, want e2 done, cancelled: enough", view)
	}
	if len(rec.Messages) != 1 || rec.Messages[0].Content != "hello e2" {
		t.Errorf("messages %+v, want the input", rec.Messages)
	}
	var types []pipeline.EventType
	for _, e := range rec.Events {
		types = append(types, e.Type)
	}
	if len(types) < 2 || types[0] != pipeline.EventRunCreated || types[len(types)-1] != pipeline.EventRunFinished {
		t.Errorf("events %v, want run.created first and run.finished last", types)
	}
	if none := exported(t, h.get("/v1/export/runs?batch_id=nobatch")); len(none) != 0 {
		t.Errorf("exported %v for a batch that has no run, want nothing", runIDs(none))
	}
}

func TestExport_refuses_a_bad_filter_naming_each_problem(t *testing.T) {
	h := newHarness(t)
	h.get("/v1/export/runs?status=finished&since=yesterday").wantError(t, http.StatusBadRequest, "invalid_request", "status", "since")
}
