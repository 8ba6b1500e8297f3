package stepworker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model/openai"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// runBatchers runs one pass of the batcher of each model in batch mode
// whose lease this worker holds or takes (ADR 0071): any step worker's
// sweeper may run a model's batcher, one at a time; the lease, a sweep
// interval's pass renewing it, passes to another worker's sweeper when
// this one stops renewing it (it died).
func (w *Worker) runBatchers(ctx context.Context) {
	for _, b := range w.models.batched() {
		if err := w.batcherPass(ctx, b); err != nil && ctx.Err() == nil {
			w.log.Warn("batcher pass; the next one takes the jobs up from their state", "model", b.key, "error", err)
		}
	}
}

// batcherPass closes the model's open batch into jobs while it is due,
// then moves each unfinished job on from the state its record holds.
func (w *Worker) batcherPass(ctx context.Context, b batched) error {
	if held, err := w.holdBatcher(ctx, b); !held {
		return err
	}
	bounds := store.InferenceBounds{MaxRequests: b.settings.MaxRequests, MaxBytes: b.settings.MaxBytes, MaxWait: b.settings.MaxWait}
	for {
		n, err := w.store.CloseInferenceBatch(ctx, b.key, newInstance(), bounds, w.now())
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	jobs, err := w.store.InferenceJobs(ctx, b.key)
	if err != nil {
		return err
	}
	var errs []error
	for _, j := range jobs {
		if err := w.advanceJob(ctx, b, j); err != nil {
			errs = append(errs, fmt.Errorf("job %s (%s): %w", j.ID, j.State, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d jobs: %w", len(errs), len(jobs), errs[0])
	}
	return nil
}

// holdBatcher takes or renews the lease of the model's batcher for a
// lease period.
func (w *Worker) holdBatcher(ctx context.Context, b batched) (bool, error) {
	return w.store.TakeBatcherLease(ctx, b.key, w.instance, w.settings.Lease.Duration)
}

// advanceJob moves job j as far as it goes now: upload its file, create
// its batch (after looking for one created for it by a batcher that died
// before recording it), poll the batch, and, once it has ended, hand each
// answer to its step and end the job. Each move is a compare-and-set from
// the state j was read in: a batcher that moved it meanwhile wins, and
// this one stops.
func (w *Worker) advanceJob(ctx context.Context, b batched, j store.InferenceJob) error {
	switch j.State {
	case pipeline.InferenceJobClosed:
		lines, err := w.wantedLines(ctx, b, j)
		if err != nil {
			return err
		}
		if len(lines) == 0 {
			_, err := w.store.FinishInferenceJob(ctx, b.key, j.ID, j.State, pipeline.InferenceJobDone, nil, w.now())
			return err
		}
		fileID, err := b.model.UploadBatch(ctx, "stepwise-"+j.ID+".jsonl", jsonLines(lines))
		if err != nil {
			return err
		}
		if ok, err := w.store.AdvanceInferenceJob(ctx, b.key, j.ID, j.State, pipeline.InferenceJobUploaded, map[string]string{"file_id": fileID}); !ok {
			return err
		}
		j.State, j.FileID = pipeline.InferenceJobUploaded, fileID
		fallthrough
	case pipeline.InferenceJobUploaded:
		batchID, found, err := b.model.FindBatch(ctx, j.ID, j.ClosedAt)
		if err != nil {
			return err
		}
		if !found {
			if held, err := w.holdBatcher(ctx, b); !held {
				return err // another batcher took the model over: it creates the batch
			}
			if batchID, err = b.model.CreateBatch(ctx, j.FileID, j.ID, b.settings.Window); err != nil {
				return err
			}
		}
		if ok, err := w.store.AdvanceInferenceJob(ctx, b.key, j.ID, j.State, pipeline.InferenceJobSubmitted, map[string]string{"batch_id": batchID}); !ok {
			return err
		}
		j.State, j.BatchID = pipeline.InferenceJobSubmitted, batchID
		fallthrough
	case pipeline.InferenceJobSubmitted:
		st, err := b.model.BatchStatus(ctx, j.BatchID)
		if err != nil || !st.Ended() {
			return err
		}
		return w.endJob(ctx, b, j, st)
	}
	return fmt.Errorf("job %s of model %s is in state %q", j.ID, b.key, j.State)
}

// wantedLines are the request lines of job j whose runs still want them
// (store.InferenceWanted): a request of a run that ended (cancelled) or
// moved past its step since it was queued is left out of the file.
func (w *Worker) wantedLines(ctx context.Context, b batched, j store.InferenceJob) (map[string]string, error) {
	lines, err := w.store.InferenceJobLines(ctx, b.key, j.ID)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(lines))
	steps := make([]store.InferenceStep, 0, len(lines))
	for id := range lines {
		runID, step, ok := stepOf(id)
		if !ok {
			continue // no step made it: kept, its answer is dropped as before
		}
		ids = append(ids, id)
		steps = append(steps, store.InferenceStep{RunID: runID, Step: step})
	}
	wanted, err := w.store.InferenceWanted(ctx, steps)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if !wanted[i] {
			delete(lines, id)
			w.log.Info("batch request of a run that ended or moved on; left out of the batch", "model", b.key, "job", j.ID, "custom_id", id)
		}
	}
	return lines, nil
}

// endJob hands every answer of an ended batch to its step, then ends the
// job: done, or, when requests its runs still want got no answer (the
// batch failed, expired or was cancelled, or an answer line was missing
// or not JSON), by the model's batch.on_failure: requeued, those requests
// back in the open batch, or done, each of their steps told to infer
// live. A batcher that dies in between hands the answers again: a
// step takes an answer once (AnswerInference).
func (w *Worker) endJob(ctx context.Context, b batched, j store.InferenceJob, st openai.BatchState) error {
	completed := st.Status == "completed"
	answered := map[string]bool{}
	for _, file := range []string{st.OutputFileID, st.ErrorFileID} {
		if file == "" {
			continue
		}
		content, err := b.model.FileContent(ctx, file)
		if err != nil {
			return err
		}
		if err := w.handAnswers(ctx, content, completed, answered); err != nil {
			return err
		}
	}
	lines, err := w.wantedLines(ctx, b, j)
	if err != nil {
		return err
	}
	var unanswered []string
	for id := range lines {
		if !answered[id] {
			unanswered = append(unanswered, id)
		}
	}
	to := pipeline.InferenceJobDone
	var requeue []string
	if len(unanswered) > 0 {
		slices.Sort(unanswered)
		live := b.settings.OnFailure == openai.BatchOnFailureLive
		w.log.Warn("batch ended without answering some requests; they go to the next batch, or live (batch.on_failure)", "model", b.key, "job", j.ID,
			"batch_id", j.BatchID, "status", st.Status, "unanswered", len(unanswered), "live", live)
		if !live {
			to, requeue = pipeline.InferenceJobRequeued, unanswered
		} else if err := w.handLive(ctx, unanswered); err != nil {
			return err
		}
	}
	_, err = w.store.FinishInferenceJob(ctx, b.key, j.ID, j.State, to, requeue, w.now())
	return err
}

// handLive tells each step of ids to infer live: their batch failed, and
// the model's batch.on_failure is live.
func (w *Worker) handLive(ctx context.Context, ids []string) error {
	for _, id := range ids {
		if err := w.hand(ctx, id, inferenceAnswer{Live: true}); err != nil {
			return err
		}
	}
	return nil
}

// outputLine is a line of a batch's output or error file.
type outputLine struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// answerHandOffs is how many answers of a file the batcher hands to their
// steps at once: each is a script and a reconcile, a few round trips, and
// a file holds up to 50,000 of them.
const answerHandOffs = 32

// handAnswers hands each answer line of content to its step (hand),
// answerHandOffs at a time. A line's error of a batch that did not
// complete (expired, cancelled) is no answer, nor is a line that is not
// JSON: endJob sends their requests again. It records in answered the
// custom_ids answered. After a hand-off fails it starts no more and
// returns the first failure (errgroup): the next pass hands the file
// again (a step takes an answer once).
func (w *Worker) handAnswers(ctx context.Context, content []byte, completed bool, answered map[string]bool) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(answerHandOffs)
	sc := bufio.NewScanner(bytes.NewReader(content))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() && gctx.Err() == nil {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l outputLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			w.log.Warn("batch answer line that is not JSON; its request counts as unanswered", "error", err)
			continue
		}
		a, ok := answerOfLine(l, completed)
		if !ok {
			continue
		}
		answered[l.CustomID] = true
		g.Go(func() error { return w.hand(gctx, l.CustomID, a) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return sc.Err()
}

// hand hands answer a to the step that awaits customID, and reconciles
// its run if the step took it, so that it is requested at once (the
// sweeper does, if this worker dies first).
func (w *Worker) hand(ctx context.Context, customID string, a inferenceAnswer) error {
	runID, step, ok := stepOf(customID)
	if !ok {
		w.log.Warn("batch answer for a custom_id no step made; dropped", "custom_id", customID)
		return nil
	}
	kept, err := json.Marshal(a)
	if err != nil {
		return err
	}
	took, err := w.store.AnswerInference(ctx, runID, step, customID, kept, w.now())
	if err != nil {
		return err
	}
	if took {
		w.logErr(w.log.With("run_id", runID, "step", step), "reconcile an answered step; the sweeper will", w.reconcile(ctx, runID))
	}
	return nil
}

// answerOfLine is what a line answers its step, ok false when it answers
// nothing.
func answerOfLine(l outputLine, completed bool) (inferenceAnswer, bool) {
	switch {
	case l.Response != nil && l.Response.StatusCode == 200:
		return inferenceAnswer{Body: l.Response.Body}, true
	case l.Response != nil:
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(l.Response.Body, &e)
		return inferenceAnswer{Error: fmt.Sprintf("status %d: %s", l.Response.StatusCode, e.Error.Message)}, true
	case l.Error != nil && completed:
		return inferenceAnswer{Error: l.Error.Code + ": " + l.Error.Message}, true
	}
	return inferenceAnswer{}, false
}

// jsonLines is a job's request lines as an input file, in custom_id order.
func jsonLines(lines map[string]string) []byte {
	ids := make([]string, 0, len(lines))
	for id := range lines {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(lines[id])
		b.WriteByte('\n')
	}
	return []byte(b.String())
}
