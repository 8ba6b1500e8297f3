package stepworker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/model/openai"
)

// batchModel is a model that has a batch mode (openai.Model): its
// requests can go through the provider's Batch API (ADR 0071).
type batchModel interface {
	model.Model
	Batch() (openai.BatchSettings, bool)
	BatchLine(customID string, req model.Request) (line []byte, modelName string, err error)
	BatchAnswer(body []byte) (model.Response, error)
	UploadBatch(ctx context.Context, name string, content []byte) (string, error)
	CreateBatch(ctx context.Context, fileID, job string, window time.Duration) (string, error)
	FindBatch(ctx context.Context, job string, since time.Time) (string, bool, error)
	BatchStatus(ctx context.Context, id string) (openai.BatchState, error)
	FileContent(ctx context.Context, id string) ([]byte, error)
}

// errAwaiting is what a step's inference returns when its request went
// to its model's open batch and the step parked awaiting its answer: not
// a failure, the step's claim is simply over.
var errAwaiting = errors.New("the step awaits its batch inference")

// errNotParked wraps a failure of Redis while a step of a model in batch
// mode reads its answer or parks: not the run's fault, so the run does not
// end; its lease runs out and the sweeper requests the step again (or the
// step moved on without this claim: ErrLeaseLost).
var errNotParked = errors.New("the step's batch answer could not be read or the step parked")

// parked reports whether the step's inference, ending with err, left the
// step to its batch (parked) or to the sweeper (errNotParked), rather than
// failing it.
func parked(err error, log *slog.Logger) bool {
	if errors.Is(err, errNotParked) {
		log.Warn("batch inference; the sweeper retries the step", "error", err)
	}
	return errors.Is(err, errAwaiting) || errors.Is(err, errNotParked)
}

// inferOrAwait infers req live, or, for a model in batch mode, through
// its batch (ADR 0071): it returns the answer the step's batch gave it
// (AnswerInference kept it with the run) or, when there is none yet, puts
// the request in the model's open batch and parks the step awaiting it
// (errAwaiting). A model without a batch mode costs a type assertion, no
// round trip. The fallbacks of ADR 0072 send a step live: a run whose mode
// is live (it asked, a chat turn made it, a person decided one of its
// calls), a run whose deadline is near, a step whose failed batch fell
// back to live; an error answer fails the step or, by batch.on_error,
// sends its request again under the next attempt.
func (w *Worker) inferOrAwait(ctx context.Context, run pipeline.Run, agent config.Agent, mdl model.Model, req model.Request) (model.Response, error) {
	b, s, ok := batchOf(run, mdl)
	if !ok {
		return w.inferSpan(ctx, run, mdl, req)
	}
	kept, found, err := w.store.InferenceAnswer(ctx, run.ID, run.Step)
	if err != nil {
		return model.Response{}, fmt.Errorf("%w: %w", errNotParked, err)
	}
	attempt, retry := run.Attempts, false
	if found {
		var a inferenceAnswer
		if err := json.Unmarshal(kept, &a); err != nil {
			return model.Response{}, fmt.Errorf("read the step's batch answer: %w", err)
		}
		switch {
		case a.Live:
			return w.inferSpan(ctx, run, mdl, req)
		case a.Error == "":
			return b.BatchAnswer(a.Body)
		case s.OnError != openai.BatchOnErrorRetry || run.Attempts >= w.settings.MaxAttempts:
			return model.Response{}, fmt.Errorf("the batch answered with an error (attempt %d): %s", run.Attempts, a.Error)
		}
		attempt, retry = run.Attempts+1, true // the retry is the next attempt: this claim stays counted
	}
	if timeout := agent.Stop.Timeout.Duration; timeout > 0 && run.CreatedAt.Add(timeout).Sub(w.now()) <= s.LiveWithin {
		return w.inferSpan(ctx, run, mdl, req) // a batch could answer after the run's deadline
	}
	id := customID(run, attempt)
	line, name, err := b.BatchLine(id, req)
	if err != nil {
		return model.Response{}, err
	}
	key := w.models.keyOf(run)
	if config.ProviderOpenAI+":"+name != key {
		// A step's override names another model: a batch takes one model's
		// requests, so this one goes live.
		return w.inferSpan(ctx, run, mdl, req)
	}
	now := w.now()
	if err := w.store.QueueInference(ctx, key, id, line, now); err != nil {
		return model.Response{}, fmt.Errorf("%w: %w", errNotParked, err)
	}
	if err := w.store.AwaitInference(ctx, run.ID, run.Step, run.LeaseOwner, id, key, retry, now); err != nil {
		return model.Response{}, fmt.Errorf("%w: %w", errNotParked, err)
	}
	return model.Response{}, errAwaiting
}

// batchOf returns mdl as a batch model and its settings when the run's
// steps infer through its batches (ADR 0071, 0072): the model has a batch
// mode and the run's inference mode, or the model's default, is not live.
// A type assertion, no round trip.
func batchOf(run pipeline.Run, mdl model.Model) (batchModel, openai.BatchSettings, bool) {
	b, ok := mdl.(batchModel)
	if !ok {
		return nil, openai.BatchSettings{}, false
	}
	s, on := b.Batch()
	return b, s, on && cmp.Or(run.Inference, s.Default) != pipeline.InferenceLive
}

// inBatchMode reports whether the run's steps infer through its model's
// batches (batchOf).
func inBatchMode(run pipeline.Run, mdl model.Model) bool {
	_, _, ok := batchOf(run, mdl)
	return ok
}

// inferenceAnswer is what the batcher keeps with a step for its claim: the
// body of the answer line, the error the line holds instead, or, for a
// step whose batch failed under batch.on_failure live, that it infers
// live.
type inferenceAnswer struct {
	Body  json.RawMessage `json:"body,omitempty"`
	Error string          `json:"error,omitempty"`
	Live  bool            `json:"live,omitempty"`
}

// customID names a step's request in a batch: "<run>.<step>.<attempt>",
// the attempt of the claim that parked it (the next one for a retry).
func customID(run pipeline.Run, attempt int) string {
	return run.ID + "." + strconv.Itoa(run.Step) + "." + strconv.Itoa(attempt)
}

// stepOf reads a custom_id back: the run and step it names, ok false when
// it is not one of customID's (a run id may hold dots: it is read from the
// right).
func stepOf(id string) (runID string, step int, ok bool) {
	rest, attempt, ok := cutLast(id)
	if !ok {
		return "", 0, false
	}
	runID, s, ok := cutLast(rest)
	if !ok || runID == "" {
		return "", 0, false
	}
	step, err := strconv.Atoi(s)
	if _, aerr := strconv.Atoi(attempt); err != nil || aerr != nil {
		return "", 0, false
	}
	return runID, step, true
}

func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// batched is a model in batch mode, by its key.
type batched struct {
	key      string
	model    batchModel
	settings openai.BatchSettings
}

// batched lists the configured models in batch mode, once a key, in the
// keys' order.
func (m *models) batched() []batched {
	var out []batched
	for _, r := range m.byAgent {
		b, ok := r.model.(batchModel)
		if !ok || slices.ContainsFunc(out, func(o batched) bool { return o.key == r.key }) {
			continue
		}
		if s, on := b.Batch(); on {
			out = append(out, batched{key: r.key, model: b, settings: s})
		}
	}
	slices.SortFunc(out, func(a, b batched) int { return strings.Compare(a.key, b.key) })
	return out
}
