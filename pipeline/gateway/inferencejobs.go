package gateway

import (
	"net/http"
	"slices"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// InferenceJobView is a provider batch job of a model in batch mode as
// GET /v1/inference-jobs lists it (ADR 0071): not a batch of runs
// (POST /v1/runs/batch), but the job that carries many runs' steps'
// requests to the provider's Batch API.
type InferenceJobView struct {
	JobID    string                     `json:"job_id"`
	State    pipeline.InferenceJobState `json:"state"`
	Requests int                        `json:"requests"`
	FileID   string                     `json:"file_id,omitempty"`  // once uploaded
	BatchID  string                     `json:"batch_id,omitempty"` // the provider's, once submitted
	ClosedAt time.Time                  `json:"closed_at"`
	EndedAt  *time.Time                 `json:"ended_at,omitempty"` // once done or requeued
}

// InferenceModelView is a model in batch mode: its open batch (the
// requests waiting for the next job, the oldest's wait) and its jobs,
// the unfinished ones first (oldest first), then those ended in the last
// day (the last ended first).
type InferenceModelView struct {
	Model             string             `json:"model"`
	Waiting           int                `json:"waiting"`
	OldestWaitSeconds float64            `json:"oldest_wait_seconds"`
	Jobs              []InferenceJobView `json:"jobs"`
}

// InferenceJobList is the answer of GET /v1/inference-jobs.
type InferenceJobList struct {
	Models []InferenceModelView `json:"models"`
}

// listInferenceJobs serves GET /v1/inference-jobs (admin: a job holds
// every tenant's requests): each model in batch mode of the
// configuration (Config.InferenceModels), in key order.
func (s *Server) listInferenceJobs(w http.ResponseWriter, r *http.Request) {
	ctx, now := r.Context(), s.cfg.Now()
	out := InferenceJobList{Models: []InferenceModelView{}}
	for _, m := range s.cfg.InferenceModels {
		q, err := s.cfg.Store.InferenceQueue(ctx, m)
		if err != nil {
			s.fail(w, r, "the open batch", err)
			return
		}
		open, err := s.cfg.Store.InferenceJobs(ctx, m)
		if err != nil {
			s.fail(w, r, "the inference jobs", err)
			return
		}
		ended, err := s.cfg.Store.EndedInferenceJobs(ctx, m)
		if err != nil {
			s.fail(w, r, "the ended inference jobs", err)
			return
		}
		v := InferenceModelView{Model: m, Waiting: q.Waiting, Jobs: []InferenceJobView{}}
		if !q.Since.IsZero() {
			v.OldestWaitSeconds = max(now.Sub(q.Since), 0).Seconds()
		}
		for _, j := range slices.Concat(open, ended) {
			v.Jobs = append(v.Jobs, inferenceJobView(j))
		}
		out.Models = append(out.Models, v)
	}
	writeJSON(w, http.StatusOK, out)
}

func inferenceJobView(j store.InferenceJob) InferenceJobView {
	v := InferenceJobView{JobID: j.ID, State: j.State, Requests: j.Requests, FileID: j.FileID, BatchID: j.BatchID, ClosedAt: j.ClosedAt.UTC()}
	if !j.EndedAt.IsZero() {
		ended := j.EndedAt.UTC()
		v.EndedAt = &ended
	}
	return v
}
