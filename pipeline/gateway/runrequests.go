package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// Defaults of RunRequests.
const (
	DefaultMaxActive    = 10000
	DefaultAdmitBackoff = time.Second
)

// RunRequests is how the gateway takes runs requested on Kafka
// (HandleRunRequest, ADR 0056).
type RunRequests struct {
	// MaxActive, TenantMax and BatchMax bound the active runs (not yet
	// retired) of the deployment, of one tenant and of one batch: a
	// request is admitted only under all three. Defaults
	// DefaultMaxActive, then MaxActive for the other two.
	MaxActive, TenantMax, BatchMax int
	// Keys are the producers' signing keys (topics.VerifySignature), and
	// Tenants the tenant each producer bound to one acts for. A signed
	// request is verified whatever RequireSignature says, and runs in its
	// producer's tenant; an unsigned one in the default tenant.
	Keys    map[string][][]byte
	Tenants map[string]string
	// RequireSignature refuses unsigned requests
	// (decisions.require_signature).
	RequireSignature bool
	// AdmitBackoff caps the doubling pause between two looks for room of a
	// request that waits for admission. Default DefaultAdmitBackoff (1s).
	AdmitBackoff time.Duration
}

func (r *RunRequests) setDefaults() {
	if r.MaxActive == 0 {
		r.MaxActive = DefaultMaxActive
	}
	if r.TenantMax == 0 {
		r.TenantMax = r.MaxActive
	}
	if r.BatchMax == 0 {
		r.BatchMax = r.MaxActive
	}
	if r.AdmitBackoff == 0 {
		r.AdmitBackoff = DefaultAdmitBackoff
	}
}

// HandleRunRequest handles a message of the run-requests topic: a
// RunRequested becomes a run exactly as the body of POST /v1/runs does
// (newRunFor, start), in the tenant of the producer that signed it, and
// gets one RunRequestOutcome: created, duplicate (the same request again:
// nothing changes) or rejected with the code and message the route would
// answer. A message that is no RunRequested (not JSON, no run_id) is
// malformed, for the dead-letter topic.
//
// A new run is admitted first (AdmitRun): while the deployment, its
// tenant or its batch has no room, the handler holds the message, looking
// again with a doubling pause, so the backlog waits in Kafka, and the
// partition's later requests wait behind it. A store that does not answer
// is an error, and the request comes back; so does one whose handler
// stopped (ctx ends) while it waited.
func (s *Server) HandleRunRequest(msg *message.Message) error {
	req, err := topics.Decode[topics.RunRequested](msg.Payload)
	if err != nil {
		return err
	}
	out := topics.RunRequestOutcome{Header: topics.Header{RunID: req.RunID}, BatchID: req.BatchID}
	created, ae, err := s.request(msg.Context(), req, msg.Payload)
	switch {
	case err != nil:
		return err
	case ae != nil:
		s.log.Info("run request rejected", "run_id", req.RunID, "code", ae.body.Error.Code, "reason", ae.body.Error.Message)
		out.Outcome, out.Code, out.Reason = topics.RequestRejected, ae.body.Error.Code, ae.body.Error.Message
	case created:
		out.Outcome = topics.RequestCreated
	default:
		out.Outcome = topics.RequestDuplicate
	}
	return topics.Publish(s.cfg.Publisher, s.cfg.Names.RunRequestOutcomes(), out)
}

// request makes req's run, waiting for its admission: created is false for
// a duplicate; ae refuses it; err is for a retry.
func (s *Server) request(ctx context.Context, req topics.RunRequested, raw []byte) (created bool, ae *apiError, err error) {
	tenant, ae := s.requestTenant(req, raw)
	if ae != nil {
		return false, ae, nil
	}
	if req.RerunOf != "" {
		if tenant, ae, err = s.rerunTenant(ctx, req, tenant); ae != nil || err != nil {
			return false, ae, err
		}
	}
	body, err := requestBody(raw)
	if err != nil {
		return false, nil, err
	}
	nr, ae := s.newRunFor(body, tenant)
	if ae != nil {
		return false, ae, nil
	}
	nr.run.Batch, nr.run.RerunOf = req.BatchID, req.RerunOf
	switch _, _, err := s.cfg.Store.RunOwner(ctx, nr.run.ID); {
	case errors.Is(err, store.ErrNotFound):
		// A new run: room first, then its batch, then the run.
		if err := s.admit(ctx, nr.run); err != nil {
			return false, nil, err
		}
		if nr.run.Batch != "" {
			if ae, err := s.joinBatch(ctx, nr.run); ae != nil || err != nil {
				return false, ae, err
			}
		}
	case err != nil:
		return false, nil, err
	}
	// An existing run: start tells a replay from a conflict, and kicks a
	// replayed run nobody has started yet.
	_, created, err = s.start(ctx, nr)
	if err != nil {
		if ae := s.refusal(ctx, nr.run.ID, err); ae.status < http.StatusInternalServerError {
			return false, ae, nil
		}
		return false, nil, err
	}
	return created, nil, nil
}

// requestTenant is the tenant req's run is created in: its signer's, when
// it is signed and verifies; the default tenant when it is unsigned and
// signatures are not required. Otherwise the 401 the route answers a
// request without a valid key.
func (s *Server) requestTenant(req topics.RunRequested, raw []byte) (string, *apiError) {
	rr := s.cfg.RunRequests
	if req.Producer == "" && req.Signature == "" && !rr.RequireSignature {
		return pipeline.DefaultTenant, nil
	}
	if err := topics.VerifySignature(raw, rr.Keys); err != nil {
		return "", apiErr(http.StatusUnauthorized, CodeUnauthorized, "signature: "+err.Error())
	}
	if t := rr.Tenants[req.Producer]; t != "" {
		return t, nil
	}
	return pipeline.DefaultTenant, nil
}

// rerunTenant is the tenant of req, a request to re-run req.RerunOf made
// in tenant: the original's, when the request is of that tenant or the
// gateway's own (signed with its key: POST /v1/runs/rerun publishes it for
// its caller); else the 404 the route answers for a run its caller may not
// see.
func (s *Server) rerunTenant(ctx context.Context, req topics.RunRequested, tenant string) (string, *apiError, error) {
	owner, _, err := s.cfg.Store.RunOwner(ctx, req.RerunOf)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return "", nil, err
	case owner == tenant || s.cfg.Signer != nil && req.Producer == s.cfg.Signer.Producer:
		return owner, nil, nil
	}
	return "", apiErr(http.StatusNotFound, CodeNotFound, fmt.Sprintf("rerun_of: run %s not found", req.RerunOf)), nil
}

// requestBody is a RunRequested as the body of POST /v1/runs: without the
// fields only the topic has.
func requestBody(raw []byte) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, topics.Permanent(fmt.Errorf("%w: %v", topics.ErrMalformed, err))
	}
	for _, k := range topics.RunRequestFields {
		delete(fields, k)
	}
	return json.Marshal(fields)
}

// admit waits until run is admitted, looking again with a doubling pause
// up to AdmitBackoff; it returns ctx's error when ctx ends first.
func (s *Server) admit(ctx context.Context, run pipeline.Run) error {
	rr := s.cfg.RunRequests
	a := store.Admission{Run: run, At: s.cfg.Now(), MaxActive: rr.MaxActive, TenantMax: rr.TenantMax, BatchMax: rr.BatchMax}
	pause := 10 * time.Millisecond
	for waited := false; ; waited = true {
		ok, err := s.cfg.Store.AdmitRun(ctx, a)
		if err != nil || ok {
			if ok && waited {
				s.log.Debug("run request admitted after a wait", "run_id", run.ID, "tenant", run.Tenant, "batch_id", run.Batch)
			}
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("run request %s waits for admission: %w", run.ID, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, rr.AdmitBackoff)
	}
}

// joinBatch adds an admitted run to its batch; a batch of another tenant
// refuses it (409, as a run id of another tenant is), and the run's
// admission is withdrawn.
func (s *Server) joinBatch(ctx context.Context, run pipeline.Run) (*apiError, error) {
	err := s.cfg.Store.GrowBatch(ctx, run.Batch, run.Tenant, run.ID, s.cfg.Now())
	if !errors.Is(err, store.ErrConflict) {
		return nil, err
	}
	if err := s.cfg.Store.Withdraw(ctx, run); err != nil {
		return nil, err
	}
	return apiErr(http.StatusConflict, CodeConflict,
		fmt.Sprintf("batch_id %q is another tenant's batch; choose another batch_id", run.Batch)), nil
}
