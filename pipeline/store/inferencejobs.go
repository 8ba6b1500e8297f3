package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline"
)

// A model in batch mode has, under one hash tag (one Redis Cluster slot),
// its open batch, its jobs and its batcher's lease (ADR 0071):
//
//	<p>:inference:{<model>}:open          HASH   custom_id → request line (JSON)
//	<p>:inference:{<model>}:since         STRING when the oldest open request came (ms)
//	<p>:inference:{<model>}:jobs          ZSET   unfinished job ids by closing time (ms)
//	<p>:inference:{<model>}:ended         ZSET   finished job ids by finishing time (ms),
//	                                             those of the last day
//	<p>:inference:{<model>}:job:<id>      HASH   the job: state, closed_at, requests,
//	                                             file_id, batch_id, finished_at
//	<p>:inference:{<model>}:job:<id>:lines HASH  custom_id → request line, until it ends
//	<p>:inference:{<model>}:lease         STRING the batcher holding the model
//
// <model> is the model's key (config.Model.Key).

// InferenceJob is a batch job of a model as its record holds it.
type InferenceJob struct {
	ID       string
	State    pipeline.InferenceJobState
	ClosedAt time.Time
	Requests int
	FileID   string    // set from uploaded on
	BatchID  string    // set from submitted on
	EndedAt  time.Time // set once finished (done, requeued)
}

// InferenceBounds are when CloseInferenceBatch closes a model's open
// batch: MaxRequests requests, MaxBytes of request lines, or its oldest
// request waiting MaxWait.
type InferenceBounds struct {
	MaxRequests int
	MaxBytes    int
	MaxWait     time.Duration
}

// inferenceJobKeep is how long a finished job's record stays, to be listed.
const inferenceJobKeep = 24 * time.Hour

func (s *Store) inferenceKey(model, name string) string {
	return s.prefix + ":inference:{" + model + "}:" + name
}

func (s *Store) inferenceJobKey(model, job string) string {
	return s.inferenceKey(model, "job:"+job)
}

// QueueInference puts line, the request of customID, in model's open
// batch, once: queued again (a step parked again after its worker died
// between this and AwaitInference) it replaces itself.
func (s *Store) QueueInference(ctx context.Context, model, customID string, line []byte, now time.Time) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.inferenceKey(model, "open"), customID, line)
		p.SetNX(ctx, s.inferenceKey(model, "since"), toMillis(now), 0)
		return nil
	})
	if err != nil {
		return fmt.Errorf("queue the inference %s of model %s: %w", customID, model, err)
	}
	return nil
}

// CloseInferenceBatch closes model's open batch into a new job, id job,
// when b says it is due at now, and returns how many requests the job
// took: 0 when none was due (no job then).
func (s *Store) CloseInferenceBatch(ctx context.Context, model, job string, b InferenceBounds, now time.Time) (int, error) {
	what := fmt.Sprintf("close the open batch of model %s", model)
	v, err := s.call(ctx, s.scripts.inference.closeBatch, what, []string{s.inferenceKey(model, "open"), s.inferenceKey(model, "since"),
		s.inferenceKey(model, "jobs"), s.inferenceJobKey(model, job), s.inferenceJobKey(model, job) + ":lines"}, struct {
		Job         string                     `json:"job"`
		State       pipeline.InferenceJobState `json:"state"`
		MaxRequests int                        `json:"max_requests"`
		MaxBytes    int                        `json:"max_bytes"`
		Due         int64                      `json:"due"`
		Now         int64                      `json:"now"`
	}{job, pipeline.InferenceJobClosed, b.MaxRequests, b.MaxBytes, toMillis(now.Add(-b.MaxWait)), toMillis(now)})
	if err != nil {
		return 0, err
	}
	n, _ := v.(int64)
	return int(n), nil
}

// InferenceJobs returns model's unfinished jobs, oldest first.
func (s *Store) InferenceJobs(ctx context.Context, model string) ([]InferenceJob, error) {
	ids, err := s.rdb.ZRange(ctx, s.inferenceKey(model, "jobs"), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("list the jobs of model %s: %w", model, err)
	}
	return s.inferenceJobs(ctx, model, ids)
}

// EndedInferenceJobs returns model's jobs finished in the last day (their
// records go then), the last ended first.
func (s *Store) EndedInferenceJobs(ctx context.Context, model string) ([]InferenceJob, error) {
	ids, err := s.rdb.ZRevRange(ctx, s.inferenceKey(model, "ended"), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("list the ended jobs of model %s: %w", model, err)
	}
	return s.inferenceJobs(ctx, model, ids)
}

// inferenceJobs reads the records of model's jobs ids, in that order,
// leaving out those gone.
func (s *Store) inferenceJobs(ctx context.Context, model string, ids []string) ([]InferenceJob, error) {
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.inferenceJobKey(model, id))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the jobs of model %s: %w", model, err)
	}
	jobs := make([]InferenceJob, 0, len(ids))
	for i, id := range ids {
		h := cmds[i].Val()
		if len(h) == 0 {
			continue
		}
		ms := func(field string) time.Time {
			v, err := strconv.ParseInt(h[field], 10, 64)
			if err != nil {
				return time.Time{}
			}
			return fromMillis(v)
		}
		n, _ := strconv.Atoi(h["requests"])
		jobs = append(jobs, InferenceJob{ID: id, State: pipeline.InferenceJobState(h["state"]), ClosedAt: ms("closed_at"),
			Requests: n, FileID: h["file_id"], BatchID: h["batch_id"], EndedAt: ms("finished_at")})
	}
	return jobs, nil
}

// InferenceQueue is a model's open batch: how many requests wait in it,
// and since when the oldest does (zero when none does).
type InferenceQueue struct {
	Waiting int
	Since   time.Time
}

// InferenceQueue reads model's open batch.
func (s *Store) InferenceQueue(ctx context.Context, model string) (InferenceQueue, error) {
	var n *redis.IntCmd
	var since *redis.StringCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		n = p.HLen(ctx, s.inferenceKey(model, "open"))
		since = p.Get(ctx, s.inferenceKey(model, "since"))
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return InferenceQueue{}, fmt.Errorf("read the open batch of model %s: %w", model, err)
	}
	q := InferenceQueue{Waiting: int(n.Val())}
	if ms, err := since.Int64(); err == nil && q.Waiting > 0 {
		q.Since = fromMillis(ms)
	}
	return q, nil
}

// InferenceJobLines returns the request lines of model's job, custom_id →
// line.
func (s *Store) InferenceJobLines(ctx context.Context, model, job string) (map[string]string, error) {
	lines, err := s.rdb.HGetAll(ctx, s.inferenceJobKey(model, job)+":lines").Result()
	if err != nil {
		return nil, fmt.Errorf("read the requests of job %s of model %s: %w", job, model, err)
	}
	return lines, nil
}

// AdvanceInferenceJob moves model's job from `from` to `to`, writing
// fields (file_id, batch_id) with it, if the job is still in `from`. It
// reports whether it moved it.
func (s *Store) AdvanceInferenceJob(ctx context.Context, model, job string, from, to pipeline.InferenceJobState, fields map[string]string) (bool, error) {
	what := fmt.Sprintf("move job %s of model %s from %s to %s", job, model, from, to)
	v, err := s.call(ctx, s.scripts.inference.advance, what, []string{s.inferenceJobKey(model, job)}, struct {
		Expect pipeline.InferenceJobState `json:"expect"`
		To     pipeline.InferenceJobState `json:"to"`
		Fields map[string]string          `json:"fields"`
	}{from, moved(from, to), fields})
	if err != nil {
		return false, err
	}
	return v == int64(1), nil
}

// FinishInferenceJob ends model's job in `to` (done, or requeued), if it
// is still in `from` (submitted; or closed, when every request of it was
// dropped before its upload): the requests named by requeue go back to
// the open batch, the others are dropped; the record stays a day, listed
// by EndedInferenceJobs. It reports whether it ended it.
func (s *Store) FinishInferenceJob(ctx context.Context, model, job string, from, to pipeline.InferenceJobState, requeue []string, now time.Time) (bool, error) {
	if requeue == nil {
		requeue = []string{} // a JSON array, not null
	}
	what := fmt.Sprintf("end job %s of model %s %s", job, model, to)
	v, err := s.call(ctx, s.scripts.inference.finish, what, []string{s.inferenceJobKey(model, job), s.inferenceJobKey(model, job) + ":lines",
		s.inferenceKey(model, "jobs"), s.inferenceKey(model, "open"), s.inferenceKey(model, "since"), s.inferenceKey(model, "ended")}, struct {
		Job     string                     `json:"job"`
		Expect  pipeline.InferenceJobState `json:"expect"`
		To      pipeline.InferenceJobState `json:"to"`
		Requeue []string                   `json:"requeue"`
		Keep    int64                      `json:"keep"`
		Now     int64                      `json:"now"`
	}{job, from, moved(from, to), requeue, inferenceJobKeep.Milliseconds(), toMillis(now)})
	if err != nil {
		return false, err
	}
	return v == int64(1), nil
}

// TakeBatcherLease takes, or renews, the lease of model's batcher for
// owner until ttl from now. It reports whether owner holds it: false when
// another batcher's has not run out.
func (s *Store) TakeBatcherLease(ctx context.Context, model, owner string, ttl time.Duration) (bool, error) {
	v, err := s.call(ctx, s.scripts.inference.lease, "take the batcher lease of model "+model, []string{s.inferenceKey(model, "lease")}, struct {
		Owner string `json:"owner"`
		TTL   int64  `json:"ttl"`
	}{owner, ttl.Milliseconds()})
	if err != nil {
		return false, err
	}
	return v == int64(1), nil
}

// inferenceScripts are the scripts of batch inference.
type inferenceScripts struct {
	await, answer, closeBatch, advance, finish, lease, markLive *redis.Script
}

func loadInferenceScripts(load func(name string) *redis.Script) inferenceScripts {
	return inferenceScripts{
		await:      load("await_inference"),
		answer:     load("answer_inference"),
		closeBatch: load("close_inference_batch"),
		advance:    load("advance_inference_job"),
		finish:     load("finish_inference_job"),
		lease:      load("take_batcher_lease"),
		markLive:   load("mark_live"),
	}
}
