package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// MaxRerunRuns is how many runs one POST /v1/runs/rerun may select.
const MaxRerunRuns = 10000

// rerunChunk is how many run requests go to Kafka in one publish.
const rerunChunk = 500

// RerunRequest is the body of POST /v1/runs/rerun. Filter selects the
// runs, of the caller's tenant, to re-run; RequestID tells two re-runs of
// the same filter apart: the same filter with the same request_id (default
// none) is the same re-run, whose runs are requested once.
type RerunRequest struct {
	Filter    RerunFilter `json:"filter"`
	RequestID string      `json:"request_id,omitempty"`
}

// RerunFilter selects runs as GET /v1/runs's query does (parseFilter),
// and, with RunIDs, among those runs only.
type RerunFilter struct {
	RunIDs      []string `json:"run_ids,omitempty"`
	BatchID     string   `json:"batch_id,omitempty"`
	Agent       string   `json:"agent,omitempty"`
	Status      string   `json:"status,omitempty"`
	Termination string   `json:"termination,omitempty"`
	Since       string   `json:"since,omitempty"`
	Until       string   `json:"until,omitempty"`
}

// get is the filter's field by its query name, for parseFilter.
func (f RerunFilter) get(name string) string {
	return map[string]string{"batch_id": f.BatchID, "agent": f.Agent, "status": f.Status,
		"termination": f.Termination, "since": f.Since, "until": f.Until}[name]
}

// RerunResponse is the 202 answer of POST /v1/runs/rerun: how many runs
// were requested again, and the batch their new runs join.
type RerunResponse struct {
	BatchID   string `json:"batch_id"`
	Requested int    `json:"requested"`
	Status    string `json:"status"` // "accepted"
}

// rerunRuns serves POST /v1/runs/rerun: each run the filter selects gets a
// RunRequested on the run-requests topic for a new run with its input,
// agent, model and metadata, rerun_of naming it, in a batch of the
// re-run's own; the run-requests handler admits them as flow control
// allows (ADR 0056), the backlog waiting in Kafka. The new runs' ids and
// the batch's derive from the caller's tenant, the filter and request_id,
// so the same request again requests the same runs, which are duplicates
// then; and a run of that batch (a re-run the filter selects again) is not
// re-run.
func (s *Server) rerunRuns(w http.ResponseWriter, r *http.Request) {
	var req RerunRequest
	if !s.strictBody(w, r, &req, "re-run") {
		return
	}
	f, problems := parseFilter(req.Filter.get)
	if f.IsZero() && len(req.Filter.RunIDs) == 0 {
		problems = append(problems, "filter selects every run: give at least one of run_ids, batch_id, agent, status, termination, since, until")
	}
	if len(problems) > 0 {
		writeError(w, invalidAll("invalid re-run filter", problems))
		return
	}
	tenant := principalOf(r).Tenant
	if s.cfg.Signer == nil && tenant != pipeline.DefaultTenant {
		writeError(w, apiErr(http.StatusConflict, CodeConflict, fmt.Sprintf(
			"re-running runs of tenant %s needs the gateway to sign its run requests: configure decisions.gateway_producer", tenant)))
		return
	}
	f.Tenant = tenant
	key := rerunKey(tenant, req)
	batch := "rerun-" + key[:20]
	runs, ae, err := s.rerunSelection(r.Context(), f, req.Filter.RunIDs)
	switch {
	case err != nil:
		s.fail(w, r, "re-run", err)
		return
	case ae != nil:
		writeError(w, ae)
		return
	}
	var msgs []*message.Message
	for _, run := range runs {
		if run.Batch == batch {
			continue // a run this re-run requested, selected again
		}
		m, err := s.rerunMessage(r.Context(), run, key, batch)
		if err != nil {
			s.fail(w, r, "re-run of run "+run.ID, err)
			return
		}
		msgs = append(msgs, m)
	}
	for c := range slices.Chunk(msgs, rerunChunk) {
		if err := s.cfg.Publisher.Publish(s.cfg.Names.RunRequests(), c...); err != nil {
			s.log.WarnContext(r.Context(), "publish re-run requests failed", "batch_id", batch, "err", err)
			writeError(w, apiErr(http.StatusServiceUnavailable, CodeUnavailable,
				fmt.Sprintf("the re-run's requests could not all be queued; send the same request again (batch %s)", batch)))
			return
		}
	}
	writeJSON(w, http.StatusAccepted, RerunResponse{BatchID: batch, Requested: len(msgs), Status: statusAccepted})
}

// rerunKey names a re-run: a hash of the tenant, the filter (its run ids
// in order) and the request id.
func rerunKey(tenant string, req RerunRequest) string {
	req.Filter.RunIDs = slices.Sorted(slices.Values(req.Filter.RunIDs))
	b, err := json.Marshal(req)
	if err != nil {
		panic("gateway: a decoded re-run request does not encode: " + err.Error())
	}
	sum := sha256.Sum256(append([]byte("stepwise/rerun/v1\n"+tenant+"\n"), b...))
	return hex.EncodeToString(sum[:])
}

// rerunSelection is the runs f selects: among ids when given, else among
// f.Batch's runs when it names a batch (of f's tenant: another's reads as
// none), else among every run of f's tenant; at most MaxRerunRuns. A run
// of ids that does not exist, or is another tenant's, is a 404; a run of
// the batch gone with the retention is left out.
func (s *Server) rerunSelection(ctx context.Context, f store.ListFilter, ids []string) ([]pipeline.Run, *apiError, error) {
	tooMany := invalid("the filter selects more than %d runs: narrow it (since, until, agent, ...)", MaxRerunRuns)
	named := len(ids) > 0
	if !named && f.Batch != "" {
		b, err := s.cfg.Store.GetBatch(ctx, f.Batch)
		if err == nil && b.Tenant != f.Tenant {
			err = fmt.Errorf("%w: batch %s", store.ErrNotFound, f.Batch)
		}
		if err != nil {
			return nil, nil, err
		}
		ids = b.RunIDs
	}
	if ids == nil {
		var out []pipeline.Run
		for {
			runs, next, err := s.cfg.Store.ListRuns(ctx, withLimit(f, store.MaxListLimit))
			if err != nil {
				return nil, nil, err
			}
			out = append(out, runs...)
			if len(out) > MaxRerunRuns {
				return nil, tooMany, nil
			}
			if next == "" {
				return out, nil, nil
			}
			f.Cursor = next
		}
	}
	if len(ids) > MaxRerunRuns {
		return nil, tooMany, nil
	}
	var out []pipeline.Run
	for _, id := range ids {
		run, err := s.cfg.Store.GetRun(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound) && !named:
			continue
		case errors.Is(err, store.ErrNotFound), err == nil && run.Tenant != f.Tenant:
			return nil, apiErr(http.StatusNotFound, CodeNotFound, fmt.Sprintf("run %s of run_ids not found", id)), nil
		case err != nil:
			return nil, nil, err
		}
		if f.Matches(run) {
			out = append(out, run)
		}
	}
	return out, nil, nil
}

// withLimit is f with page size n.
func withLimit(f store.ListFilter, n int) store.ListFilter {
	f.Limit = n
	return f
}

// rerunMessage is the run request re-running run in batch: its input
// (the conversation before its first assistant message), agent, model and
// metadata, under an id derived from key and the run's, signed by the
// gateway when it has a key.
func (s *Server) rerunMessage(ctx context.Context, run pipeline.Run, key, batch string) (*message.Message, error) {
	h, err := s.cfg.Store.History(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	input, err := json.Marshal(h.Input())
	if err != nil {
		return nil, fmt.Errorf("input of run %s: %w", run.ID, err)
	}
	req := topics.RunRequested{
		Header: topics.Header{RunID: rerunID(run.ID, key)}, Agent: run.Agent, Input: input,
		Model: run.Model, Metadata: run.Metadata, BatchID: batch, RerunOf: run.ID,
	}
	if sg := s.cfg.Signer; sg != nil {
		if req, err = topics.Sign(req, sg.Producer, sg.Key); err != nil {
			return nil, err
		}
	}
	return topics.NewMessage(req)
}

// rerunID is the id of the re-run of run orig named by key:
// "<orig>.rerun-<8 hex digits of key>", or, when that is too long for a
// run id, "rerun-" and a hash of both.
func rerunID(orig, key string) string {
	if id := orig + ".rerun-" + key[:8]; len(id) <= MaxRunIDLength {
		return id
	}
	sum := sha256.Sum256([]byte(key + "\n" + orig))
	return "rerun-" + hex.EncodeToString(sum[:16])
}
