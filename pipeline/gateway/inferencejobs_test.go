package gateway_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// GET /v1/inference-jobs lists each model in batch mode with its open
// batch (requests waiting, the oldest's wait) and its provider jobs: the
// unfinished first, then those ended, with the provider's file and batch
// ids and when each closed and ended; a model with none shows empty.
func TestInferenceJobs_list_each_models_open_batch_and_its_jobs(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	h := newHarness(t, func(c *gateway.Config) {
		c.InferenceModels = []string{"openai:a", "openai:idle"}
		c.Now = func() time.Time { return now }
	})
	ctx, st, m := t.Context(), h.store, "openai:a"
	queue := func(id string, at time.Time) {
		t.Helper()
		if err := st.QueueInference(ctx, m, id, []byte(`{}`), at); err != nil {
			t.Fatal(err)
		}
	}
	bounds := store.InferenceBounds{MaxRequests: 2, MaxBytes: 1 << 20, MaxWait: time.Minute}
	queue("r1.0.1", now.Add(-time.Hour))
	queue("r2.0.1", now.Add(-time.Hour))
	for _, job := range []struct {
		id     string
		closed time.Time
		next   string // a request queued at the close: the next job's, or the one left waiting
	}{{"j-done", now.Add(-50 * time.Minute), "r3.0.1"}, {"j-sent", now.Add(-40 * time.Minute), "r4.1.1"}} {
		if n, err := st.CloseInferenceBatch(ctx, m, job.id, bounds, job.closed); err != nil || n == 0 {
			t.Fatalf("close %s: %d, %v", job.id, n, err)
		}
		queue(job.next, job.closed)
		st.AdvanceInferenceJob(ctx, m, job.id, pipeline.InferenceJobClosed, pipeline.InferenceJobUploaded, map[string]string{"file_id": "file-" + job.id})
		st.AdvanceInferenceJob(ctx, m, job.id, pipeline.InferenceJobUploaded, pipeline.InferenceJobSubmitted, map[string]string{"batch_id": "batch-" + job.id})
	}
	if ok, err := st.FinishInferenceJob(ctx, m, "j-done", pipeline.InferenceJobSubmitted, pipeline.InferenceJobDone, nil, now.Add(-10*time.Minute)); !ok || err != nil {
		t.Fatalf("finish: %v, %v", ok, err)
	}

	var list gateway.InferenceJobList
	h.get("/v1/inference-jobs").want(t, http.StatusOK, &list)
	if len(list.Models) != 2 {
		t.Fatalf("models %+v", list.Models)
	}
	a, idle := list.Models[0], list.Models[1]
	if a.Model != m || a.Waiting != 1 || a.OldestWaitSeconds != 2400 || len(a.Jobs) != 2 {
		t.Fatalf("model a: %+v", a)
	}
	sent, done := a.Jobs[0], a.Jobs[1]
	if sent.JobID != "j-sent" || sent.State != pipeline.InferenceJobSubmitted || sent.Requests != 1 || sent.BatchID != "batch-j-sent" || sent.EndedAt != nil {
		t.Fatalf("the job in flight: %+v", sent)
	}
	if done.JobID != "j-done" || done.State != pipeline.InferenceJobDone || done.Requests != 2 || done.FileID != "file-j-done" ||
		!done.ClosedAt.Equal(now.Add(-50*time.Minute)) || done.EndedAt == nil || !done.EndedAt.Equal(now.Add(-10*time.Minute)) {
		t.Fatalf("the ended job: %+v", done)
	}
	if idle.Model != "openai:idle" || idle.Waiting != 0 || idle.OldestWaitSeconds != 0 || len(idle.Jobs) != 0 {
		t.Fatalf("the idle model: %+v", idle)
	}
}
