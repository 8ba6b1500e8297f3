package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Batch inference (ADR 0071): a step of a model in batch mode does not
// infer; its request joins the model's open batch and the step awaits its
// answer. The run's side (this file) and the model's side
// (inferencejobs.go) are separate writes: the keys of a run and those of
// a model are in different Redis Cluster slots (ADR 0009).
//
//	<p>:{<run>}:answer   HASH  the answer a step took: step, body (JSON)
//
// The run hash's field "awaiting" names the custom_id whose answer alone
// the awaiting step takes.

// AwaitInference parks step `step`, claimed by owner, until the answer of
// customID comes (AnswerInference): the step awaits its inference, nobody
// holds it, and the claim's attempt is not counted unless counted is true
// (a step that retries an error answer: its new request is the next
// attempt, customID names it). The caller has put the
// request in its model's open batch first (QueueInference), so that no
// awaiting step lacks a request; a request whose step never parked (its
// worker died between the two writes) gets an answer nobody takes. Event
// step.awaiting_inference with data {"custom_id", "model"}. ErrLeaseLost
// when owner no longer holds the step.
func (s *Store) AwaitInference(ctx context.Context, runID string, step int, owner, customID, model string, counted bool, now time.Time) error {
	ev, err := newEntry(step, "", pipeline.EventStepAwaitingInference, now, struct {
		CustomID string `json:"custom_id"`
		Model    string `json:"model"`
	}{customID, model})
	if err != nil {
		return err
	}
	what := fmt.Sprintf("park step %d of run %s held by %s for its batch inference", step, runID, owner)
	_, err = s.call(ctx, s.scripts.inference.await, what, []string{s.runKey(runID), s.eventsKey(runID)}, struct {
		held
		State    pipeline.StepState `json:"state"`
		CustomID string             `json:"custom_id"`
		Counted  bool               `json:"counted"`
		Now      int64              `json:"now"`
		Event    entry              `json:"event"`
	}{heldBy(step, owner), moved(pipeline.StepInferring, pipeline.StepAwaitingInference), customID, counted, toMillis(now), ev})
	return err
}

// AnswerInference hands body, the answer of customID, to step `step` of
// the run if that step still awaits it: the answer is kept with the run
// and the step is pending again (not requested: the caller reconciles the
// run, and the sweeper does if the caller dies). It reports whether the
// step took it; an answer for a run that ended (cancelled), moved on, or
// took it already is dropped, so handing the same answer twice changes
// nothing.
func (s *Store) AnswerInference(ctx context.Context, runID string, step int, customID string, body []byte, now time.Time) (bool, error) {
	what := fmt.Sprintf("answer step %d of run %s (%s)", step, runID, customID)
	v, err := s.call(ctx, s.scripts.inference.answer, what, []string{s.runKey(runID)}, struct {
		Step     int                `json:"step"`
		CustomID string             `json:"custom_id"`
		Running  pipeline.RunStatus `json:"running"`
		Awaiting pipeline.StepState `json:"awaiting"`
		To       pipeline.StepState `json:"to"`
		Body     string             `json:"body"`
		Now      int64              `json:"now"`
	}{step, customID, pipeline.RunRunning, pipeline.StepAwaitingInference,
		moved(pipeline.StepAwaitingInference, pipeline.StepPending), string(body), toMillis(now)})
	if err != nil {
		return false, err
	}
	return v == int64(1), nil
}

// InferenceAnswer returns the answer step `step` of the run took
// (AnswerInference), found false when it took none. Only a step of a
// model in batch mode asks, once per claim.
func (s *Store) InferenceAnswer(ctx context.Context, runID string, step int) (body []byte, found bool, err error) {
	v, err := s.rdb.HMGet(ctx, s.prefix+":{"+runID+"}:answer", "step", "body").Result()
	if err != nil {
		return nil, false, fmt.Errorf("read the inference answer of run %s: %w", runID, err)
	}
	at, _ := v[0].(string)
	text, _ := v[1].(string)
	if at != strconv.Itoa(step) {
		return nil, false, nil
	}
	return []byte(text), true, nil
}

// InferenceStep names the step a request of a batch was made for.
type InferenceStep struct {
	RunID string
	Step  int
}

// InferenceWanted reports, for each step of steps, whether its run still
// wants its request answered: the run exists, has not ended, and is still
// at that step. A batcher drops the others' requests from the file it
// uploads (a cancelled run's, say). One round trip.
func (s *Store) InferenceWanted(ctx context.Context, steps []InferenceStep) ([]bool, error) {
	cmds := make([]*redis.SliceCmd, len(steps))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, st := range steps {
			cmds[i] = p.HMGet(ctx, s.runKey(st.RunID), "status", "step")
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the runs of %d batch requests: %w", len(steps), err)
	}
	wanted := make([]bool, len(steps))
	for i, st := range steps {
		v := cmds[i].Val()
		status, _ := v[0].(string)
		step, _ := v[1].(string)
		wanted[i] = status != "" && !pipeline.RunStatus(status).Final() && step == strconv.Itoa(st.Step)
	}
	return wanted, nil
}

// MarkLive makes the run's later steps infer live (inference "live") if
// the agent holding it is one of agents (those whose model has a batch
// mode) and it has not ended: a person decided one of its calls and may
// be waiting for what comes next. It reports whether it marked it; a run
// that is not there, has ended, or is held by another agent is left
// alone.
func (s *Store) MarkLive(ctx context.Context, runID string, agents []string) (bool, error) {
	v, err := s.call(ctx, s.scripts.inference.markLive, "mark run "+runID+" live", []string{s.runKey(runID)}, struct {
		Agents []string               `json:"agents"`
		Done   pipeline.RunStatus     `json:"done"`
		Mode   pipeline.InferenceMode `json:"mode"`
	}{agents, pipeline.RunDone, pipeline.InferenceLive})
	if err != nil {
		return false, err
	}
	return v == int64(1), nil
}
