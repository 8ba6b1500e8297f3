package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/tracing"
	"github.com/stepwise-run/stepwise/topics"
)

// createTimeout bounds the writes and the publish of one run's creation. They
// run detached from the request's context: a client that goes away between
// the write and the publish must not leave a run nobody asked a worker for.
const createTimeout = 30 * time.Second

// CreateRunResponse is the answer of POST /v1/runs: 201 for a new run, 200
// for an idempotent replay (Status is then the run's current status).
type CreateRunResponse struct {
	RunID  string             `json:"run_id"`
	Status pipeline.RunStatus `json:"status"`
}

// createRun serves POST /v1/runs.
func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	body, ae := jsonBody(w, r, s.cfg.MaxBodyBytes)
	if ae != nil {
		writeError(w, ae)
		return
	}
	nr, ae := s.newRunFor(body, principalOf(r).Tenant)
	if ae != nil {
		writeError(w, ae)
		return
	}
	s.startAndAnswer(w, r, nr)
}

// startAndAnswer starts nr's run (start) and answers as POST /v1/runs
// does: 201 for a new run, 200 for a replay, or the refusal; an answer
// of 5xx names the run, so that the same request can be sent again.
func (s *Server) startAndAnswer(w http.ResponseWriter, r *http.Request, nr newRun) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), createTimeout)
	defer cancel()
	run, created, err := s.start(ctx, nr)
	if err != nil {
		ae := s.refusal(ctx, nr.run.ID, err)
		if ae.status >= 500 {
			// The run may be stored: name it, so the retry can replay it.
			named := *ae
			named.body.RunID = nr.run.ID
			ae = &named
		}
		writeError(w, ae)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, CreateRunResponse{RunID: run.ID, Status: run.Status})
}

// newRunFor validates the body of a create (POST /v1/runs, or a run
// request from Kafka) and makes its run tenant's, with an id of its own
// when the client chose none; or it returns the answer refusing it.
func (s *Server) newRunFor(body []byte, tenant string) (newRun, *apiError) {
	nr, problems := s.parseCreate(body, false)
	if len(problems) > 0 {
		return newRun{}, invalidAll("invalid run", problems)
	}
	nr = nr.ownedBy(tenant)
	if nr.run.ID == "" {
		nr.run.ID = uuid.NewString()
	}
	return nr, nil
}

// refusal is the answer for start's error err about run runID.
func (s *Server) refusal(ctx context.Context, runID string, err error) *apiError {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = s.classifyIn(ctx, "create run "+runID, err)
	}
	return ae
}

// start lists the run, schedules its first sweep and writes the run (or
// finds the same request's run; StartRun, one round trip) and publishes StepRequested for
// its first step when the run still waits for it, then marks it requested.
// A run whose start_at is still ahead is only written, its first sweep
// scheduled at start_at: the sweeper requests its first step then
// (reconcile). The
// indexes come first, so a gateway that dies after the write leaves a run
// that is listed and that the sweeper will start; entries for a run that
// was never written are dropped by the sweeper. created is false for an idempotent replay. Errors are *apiError
// values ready to answer with, or store errors to classify.
func (s *Server) start(ctx context.Context, nr newRun) (_ pipeline.Run, _ bool, err error) {
	ctx, span := tracing.StartRun(ctx, nr.run.ID)
	defer func() { tracing.Fail(span, err); span.End() }()
	now := s.cfg.Now()
	run := nr.run
	run.Trace = tracing.Traceparent(ctx)
	run.Status = pipeline.RunCreated
	run.Step = run.FirstStep()
	run.StepState = pipeline.StepPending
	run.CreatedAt = now
	run.UpdatedAt = now
	if s.cfg.Versions != nil {
		if run.AgentVersion, err = s.cfg.Versions.Pin(ctx, run.Agent); err != nil {
			return pipeline.Run{}, false, err
		}
	}
	sweepAt := now.Add(s.cfg.SweepAfter)
	if run.StartAt.After(now) {
		sweepAt = run.StartAt // the sweeper requests its first step then
	}
	got, created, err := s.cfg.Store.StartRun(ctx, run, nr.input, sweepAt, now)
	if errors.Is(err, store.ErrConflict) {
		return pipeline.Run{}, false, apiErr(http.StatusConflict, CodeConflict,
			fmt.Sprintf("run_id %q exists with a different request; choose another run_id or send the same request", run.ID))
	}
	if err != nil {
		return pipeline.Run{}, false, err
	}
	// A replay of a run nobody has picked up yet kicks it again: the first
	// attempt may have failed before or at the publish. A duplicate
	// StepRequested is a no-op for the step worker.
	if !created && (got.Status != pipeline.RunCreated || got.Step != got.FirstStep() || got.StepState != pipeline.StepPending) {
		return got, false, nil
	}
	if got.StartAt.After(now) {
		return got, created, nil // delayed: the sweeper starts it at start_at
	}
	if err := s.publishStep(got); err != nil {
		s.log.WarnContext(ctx, "publish StepRequested failed", "run_id", run.ID, "err", err)
		return got, created, retryLater(run.ID, "its first step could not be queued")
	}
	if err := s.cfg.Store.MarkRequested(ctx, run.ID, got.Step, now); err != nil {
		// The step is queued; without the mark the sweeper queues it once more.
		s.log.WarnContext(ctx, "mark first step requested failed", "run_id", run.ID, "step", got.Step, "err", err)
	}
	return got, created, nil
}

// retryLater is the 503 for a run that is stored but not yet started; the
// same request again (same run_id) finishes the job.
func retryLater(runID, what string) *apiError {
	ae := apiErr(http.StatusServiceUnavailable, CodeUnavailable,
		fmt.Sprintf("run %s is stored but %s; retry the same request with this run_id", runID, what))
	ae.body.RunID = runID
	return ae
}

// publishStep publishes StepRequested for the run's first step (0, or a
// fork's step after its fork point) to the run-steps topic, in the run's
// trace.
func (s *Server) publishStep(run pipeline.Run) error {
	return topics.PublishTraced(s.cfg.Publisher, s.cfg.Names.RunSteps(), topics.StepRequested{Header: topics.Header{RunID: run.ID}, Step: run.FirstStep(), Tenant: run.Tenant}, run.Trace)
}
