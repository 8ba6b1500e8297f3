package stepworker

import (
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

// inferOrAwait infers req live; for a model in batch mode, it returns the
// answer the step's batch gave it (AnswerInference kept it with the run)
// or, when there is none yet, puts the request in the model's open batch
// and parks the step awaiting it (errAwaiting). A model without a batch
// mode costs a type assertion, no round trip.
func (w *Worker) inferOrAwait(ctx context.Context, run pipeline.Run, mdl model.Model, req model.Request) (model.Response, error) {
	b, ok := mdl.(batchModel)
	if !ok {
		return w.inferSpan(ctx, run, mdl, req)
	}
	if _, on := b.Batch(); !on {
		return w.inferSpan(ctx, run, mdl, req)
	}
	body, found, err := w.store.InferenceAnswer(ctx, run.ID, run.Step)
	if err != nil {
		return model.Response{}, fmt.Errorf("%w: %w", errNotParked, err)
	}
	if found {
		return answerOf(b, body)
	}
	id := customID(run)
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
	if err := w.store.AwaitInference(ctx, run.ID, run.Step, run.LeaseOwner, id, key, now); err != nil {
		return model.Response{}, fmt.Errorf("%w: %w", errNotParked, err)
	}
	return model.Response{}, errAwaiting
}

// inferenceAnswer is what the batcher keeps with a step for its claim: the
// body of the answer line, or the error the line holds instead.
type inferenceAnswer struct {
	Body  json.RawMessage `json:"body,omitempty"`
	Error string          `json:"error,omitempty"`
}

// answerOf reads the answer kept with a step as the model reads a live one.
func answerOf(b batchModel, kept []byte) (model.Response, error) {
	var a inferenceAnswer
	if err := json.Unmarshal(kept, &a); err != nil {
		return model.Response{}, fmt.Errorf("read the step's batch answer: %w", err)
	}
	if a.Error != "" {
		return model.Response{}, fmt.Errorf("the batch answered with an error: %s", a.Error)
	}
	return b.BatchAnswer(a.Body)
}

// customID names a step's request in a batch: "<run>.<step>.<attempt>",
// the attempt of the claim that parked it.
func customID(run pipeline.Run) string {
	return run.ID + "." + strconv.Itoa(run.Step) + "." + strconv.Itoa(run.Attempts)
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
