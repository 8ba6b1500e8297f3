package gateway

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// BatchView is the answer of GET /v1/batches/{id}: how far the batch's runs
// are, of those the caller may see (Total). Counts are by run status; Reasons count the done runs by their
// termination reason; Usage sums the tokens of its runs; Expired counts
// runs that are gone (ended more than runs.retention ago).
type BatchView struct {
	BatchID string                             `json:"batch_id"`
	Total   int                                `json:"total"`
	Counts  map[pipeline.RunStatus]int         `json:"counts"`
	Reasons map[pipeline.TerminationReason]int `json:"reasons"`
	Usage   pipeline.Usage                     `json:"usage"`
	Expired int                                `json:"expired,omitempty"`
}

// batchID names the batch of runIDs created for tenant: the same runs are
// the same batch, so a batch sent again (with its run_ids) is not a new one.
func batchID(tenant string, runIDs []string) string {
	sum := sha256.Sum256([]byte(tenant + "\n" + strings.Join(runIDs, "\n")))
	return "batch-" + hex.EncodeToString(sum[:10])
}

// batchRuns reads batch id of r's principal: the ids of its runs that the
// principal may see and their statuses. Each run's tenant is read with its
// status, and a run of another tenant is left out as if the batch did not
// name it; a run gone with the retention stays (its status ""). It answers
// 404 (another tenant's batch, or one with no run left, reads as none) or
// what the store's error calls for, and returns false, when it cannot.
func (s *Server) batchRuns(w http.ResponseWriter, r *http.Request, id string) ([]string, []store.RunStatus, bool) {
	p := principalOf(r)
	b, err := s.cfg.Store.GetBatch(r.Context(), id)
	if err == nil && !p.owns(b.Tenant) {
		err = store.ErrNotFound
	}
	var statuses []store.RunStatus
	if err == nil {
		statuses, err = s.cfg.Store.RunStatuses(r.Context(), b.RunIDs)
	}
	var ids []string
	var seen []store.RunStatus
	for i, st := range statuses {
		if st.Status == "" || p.owns(st.Tenant) {
			ids, seen = append(ids, b.RunIDs[i]), append(seen, st)
		}
	}
	if err == nil && len(ids) == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		s.fail(w, r, "batch "+id, err)
		return nil, nil, false
	}
	return ids, seen, true
}

// getBatch serves GET /v1/batches/{id}.
func (s *Server) getBatch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ids, statuses, ok := s.batchRuns(w, r, id)
	if !ok {
		return
	}
	v := BatchView{BatchID: id, Total: len(ids), Counts: map[pipeline.RunStatus]int{}, Reasons: map[pipeline.TerminationReason]int{}}
	for _, st := range statuses {
		v.Usage = v.Usage.Add(st.Usage)
		switch {
		case st.Status == "":
			v.Expired++
		case st.Status == pipeline.RunDone:
			v.Counts[st.Status]++
			v.Reasons[st.Reason]++
		default:
			v.Counts[st.Status]++
		}
	}
	writeJSON(w, http.StatusOK, v)
}

// BatchCancelResponse is the 202 answer of POST /v1/batches/{id}/cancel:
// how many of its runs were not done and got a cancel.
type BatchCancelResponse struct {
	BatchID   string `json:"batch_id"`
	Cancelled int    `json:"cancelled"`
	Status    string `json:"status"` // "accepted"
}

// cancelBatch serves POST /v1/batches/{id}/cancel: a cancel_run decision
// for every run of the batch that is not done and that r's principal owns
// (optional body as for a run's cancel). Cancelling twice is harmless: a done run ignores it.
func (s *Server) cancelBatch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	req, ok := s.cancelRequest(w, r)
	if !ok {
		return
	}
	ids, statuses, ok := s.batchRuns(w, r, id)
	if !ok {
		return
	}
	n := 0
	for i, st := range statuses {
		if st.Status == "" || st.Status.Final() {
			continue
		}
		d := topics.Decision{
			Header: topics.Header{RunID: ids[i]}, DecisionID: uuid.NewString(), Action: topics.ActionCancelRun,
			DecidedBy: cmp.Or(decidedBy(r, req.DecidedBy), decidedByAPI), Reason: cmp.Or(req.Reason, "batch "+id+" cancelled"),
		}
		if ae := s.publishDecision(r, d, ""); ae != nil {
			writeError(w, ae)
			return
		}
		n++
	}
	writeJSON(w, http.StatusAccepted, BatchCancelResponse{BatchID: id, Cancelled: n, Status: statusAccepted})
}
