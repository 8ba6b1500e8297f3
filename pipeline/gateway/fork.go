package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// ForkRequest is the body of POST /v1/runs/{id}/fork. FromStep is the
// original's last step whose history the fork copies; Input, when set,
// replaces the text of the last user message of that history; Model and
// Metadata, when set, replace the original's. RunID makes the fork
// idempotent as POST /v1/runs's run_id does.
type ForkRequest struct {
	FromStep *int            `json:"from_step"`
	RunID    string          `json:"run_id,omitempty"`
	Input    *string         `json:"input,omitempty"`
	Model    json.RawMessage `json:"model,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// forkRun serves POST /v1/runs/{id}/fork: a new run, in the original's
// tenant, of the agent that held the original after step from_step (its
// own agent unless a handoff at that step or before gave it to another),
// whose conversation is the original's through step from_step (its
// assistant message and its tool results), and which runs from step
// from_step+1 on, as LangGraph's time travel replays a thread's
// checkpoints up to one and runs on from there. Answers 201 (200 for the
// same request again) as POST /v1/runs does; 404 for a run the caller may
// not see; 400 for a step outside the original's complete steps.
func (s *Server) forkRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req ForkRequest
	if !s.strictBody(w, r, &req, "fork") {
		return
	}
	if req.FromStep == nil {
		writeError(w, invalid("invalid fork: from_step is missing"))
		return
	}
	orig, err := s.cfg.Store.GetRun(r.Context(), id)
	if err != nil {
		s.fail(w, r, "run "+id, err)
		return
	}
	if !s.visible(w, r, id, orig.Tenant) {
		return
	}
	hist, err := s.cfg.Store.History(r.Context(), id)
	if err != nil {
		s.fail(w, r, "run "+id, err)
		return
	}
	msgs, ae := forkHistory(orig, hist, *req.FromStep, req.Input)
	if ae != nil {
		writeError(w, ae)
		return
	}
	nr, ae := s.forkOf(orig, hist.HolderAfter(*req.FromStep, orig.Agent), msgs, req)
	if ae != nil {
		writeError(w, ae)
		return
	}
	s.startAndAnswer(w, r, nr)
}

// forkOf is the new run of a fork of orig with history msgs: validated as
// the body of POST /v1/runs of agent (the one holding orig at the fork
// point) with the original's model and metadata unless req replaces them,
// in the original's tenant, its request hash covering the fork point too.
func (s *Server) forkOf(orig pipeline.Run, agent string, msgs []pipeline.Message, req ForkRequest) (newRun, *apiError) {
	body, err := json.Marshal(struct {
		RunID    string             `json:"run_id,omitempty"`
		Agent    string             `json:"agent"`
		Input    []pipeline.Message `json:"input"`
		Model    json.RawMessage    `json:"model,omitempty"`
		Metadata json.RawMessage    `json:"metadata,omitempty"`
	}{req.RunID, agent, msgs, orDefault(req.Model, orig.Model), orDefault(req.Metadata, orig.Metadata)})
	if err != nil {
		return newRun{}, invalid("invalid fork: %v", err)
	}
	nr, ae := s.newRunFor(body, orig.Tenant)
	if ae != nil {
		return newRun{}, ae
	}
	nr.run.ForkedFrom = &pipeline.ForkPoint{RunID: orig.ID, Step: *req.FromStep}
	sum := sha256.Sum256([]byte(nr.run.RequestHash + "\nfork " + orig.ID + " " + strconv.Itoa(*req.FromStep)))
	nr.run.RequestHash = hex.EncodeToString(sum[:])
	return nr, nil
}

// orDefault is raw unless it is absent or null, else def.
func orDefault(raw, def json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return def
	}
	return raw
}

// forkHistory is the conversation a fork of run from step copies: the
// messages before the assistant message of step+1, or all of them when
// step is the last step of a run that is done. A step is complete, and a
// fork point, when the step after it has begun (its history is then
// whole) or the run is done; others are refused naming the range. With
// input set, the last user message of the copy gets it as its text.
func forkHistory(run pipeline.Run, h store.History, step int, input *string) ([]pipeline.Message, *apiError) {
	last := -1
	for s := range h.Turns {
		if _, next := h.Turns[s+1]; next || run.Status == pipeline.RunDone {
			last = max(last, s)
		}
	}
	if _, ok := h.Turns[step]; !ok || step > last {
		if last < 0 {
			return nil, invalid("from_step %d: run %s has no complete step to fork from yet", step, run.ID)
		}
		return nil, invalid("from_step %d is outside the steps of run %s a fork can start after: 0 to %d", step, run.ID, last)
	}
	msgs := h.Messages
	if at, ok := h.Turns[step+1]; ok {
		msgs = msgs[:at]
	}
	msgs = slices.Clone(msgs)
	if input == nil {
		return msgs, nil
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == pipeline.RoleUser {
			msgs[i].Content = *input
			return msgs, nil
		}
	}
	return nil, invalid("input: the history of run %s through step %d has no user message to edit", run.ID, step)
}
