package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var inferenceCases = []contractCase{
	{"a_parked_step_takes_the_answer_it_awaits_once_and_no_other", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		f.noEventsFrom(t, "r1", func() {
			wantErr(t, f.st.AwaitInference(f.ctx, "r1", 0, "w2", "r1.0.1", "openai:m", false, at(2)), store.ErrLeaseLost)
		})
		if err := f.st.AwaitInference(f.ctx, "r1", 0, "w1", "r1.0.1", "openai:m", false, at(2)); err != nil {
			t.Fatalf("AwaitInference: %v", err)
		}
		run, err := f.st.GetRun(f.ctx, "r1")
		if err != nil || run.StepState != pipeline.StepAwaitingInference || run.Attempts != 0 || run.LeaseOwner != "" || !run.RequestedAt.IsZero() {
			t.Fatalf("after the park: %+v, %v", run, err)
		}
		evs := f.events(t, "r1")
		last := evs[len(evs)-1]
		if last.Type != pipeline.EventStepAwaitingInference {
			t.Fatalf("last event %s", last.Type)
		}
		wantJSON(t, last.Data, `{"custom_id":"r1.0.1","model":"openai:m"}`)
		// Parked, the step cannot be claimed: only its answer wakes it.
		_, err = f.st.ClaimStep(f.ctx, "r1", 0, lease("w3", at(40)), at(3))
		wantErr(t, err, store.ErrStale)

		for _, other := range []struct {
			step int
			id   string
		}{{0, "r1.0.0"}, {1, "r1.0.1"}} {
			if took, err := f.st.AnswerInference(f.ctx, "r1", other.step, other.id, []byte(`{"body":"no"}`), at(4)); err != nil || took {
				t.Fatalf("answer %s for step %d taken: %v, %v", other.id, other.step, took, err)
			}
		}
		if took, err := f.st.AnswerInference(f.ctx, "r1", 0, "r1.0.1", []byte(`{"body":"yes"}`), at(4)); err != nil || !took {
			t.Fatalf("the awaited answer was not taken: %v, %v", took, err)
		}
		if took, err := f.st.AnswerInference(f.ctx, "r1", 0, "r1.0.1", []byte(`{"body":"again"}`), at(5)); err != nil || took {
			t.Fatalf("the same answer taken twice: %v, %v", took, err)
		}
		body, found, err := f.st.InferenceAnswer(f.ctx, "r1", 0)
		if err != nil || !found || string(body) != `{"body":"yes"}` {
			t.Fatalf("the step's answer: %q, %v, %v", body, found, err)
		}
		if _, found, _ := f.st.InferenceAnswer(f.ctx, "r1", 1); found {
			t.Fatal("step 1 found step 0's answer")
		}
		run, err = f.st.ClaimStep(f.ctx, "r1", 0, lease("w3", at(40)), at(6))
		if err != nil || run.Attempts != 1 {
			t.Fatalf("the claim after the answer: %+v, %v", run, err)
		}
		f.commit(t, "r1", 0, "w3", "c1")
	}},
	{"a_cancelled_runs_answer_is_dropped", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		if err := f.st.AwaitInference(f.ctx, "r1", 0, "w1", "r1.0.1", "openai:m", false, at(2)); err != nil {
			t.Fatalf("AwaitInference: %v", err)
		}
		if _, err := f.st.CancelRun(f.ctx, "r1", "d1", "test", "stop", at(3)); err != nil {
			t.Fatalf("CancelRun: %v", err)
		}
		if took, err := f.st.AnswerInference(f.ctx, "r1", 0, "r1.0.1", []byte(`{}`), at(4)); err != nil || took {
			t.Fatalf("a cancelled run took its answer: %v, %v", took, err)
		}
	}},
	{"an_ended_runs_answer_goes_with_the_run", func(t *testing.T, f *fixture) {
		f = f.retaining(retention)
		f.claimed(t, "r1")
		if err := f.st.AwaitInference(f.ctx, "r1", 0, "w1", "r1.0.1", "openai:m", false, at(2)); err != nil {
			t.Fatalf("AwaitInference: %v", err)
		}
		if took, err := f.st.AnswerInference(f.ctx, "r1", 0, "r1.0.1", []byte(`{}`), at(3)); err != nil || !took {
			t.Fatalf("the answer was not taken: %v, %v", took, err)
		}
		run, err := f.st.CancelRun(f.ctx, "r1", "d1", "test", "stop", at(4))
		if err != nil {
			t.Fatalf("CancelRun: %v", err)
		}
		if err := f.st.MarkPublished(f.ctx, run, at(5)); err != nil { // its result published, the run retires
			t.Fatalf("MarkPublished: %v", err)
		}
		if ttl := f.rdb.PTTL(f.ctx, f.prefix+":{r1}:answer").Val(); ttl <= 0 {
			t.Fatalf("the ended run's answer has time to live %s; want the run's", ttl)
		}
	}},
	{"an_open_batch_closes_when_full_or_old_enough_and_a_failed_job_requeues_the_unanswered", func(t *testing.T, f *fixture) {
		const m = "openai:m"
		bounds := store.InferenceBounds{MaxRequests: 2, MaxBytes: 1 << 20, MaxWait: 10 * time.Second}
		queue := func(id string, sec int) {
			t.Helper()
			if err := f.st.QueueInference(f.ctx, m, id, []byte(`{"custom_id":"`+id+`"}`), at(sec)); err != nil {
				t.Fatal(err)
			}
		}
		closeAt := func(job string, sec, want int) {
			t.Helper()
			if n, err := f.st.CloseInferenceBatch(f.ctx, m, job, bounds, at(sec)); err != nil || n != want {
				t.Fatalf("close %s at %ds: %d requests, %v; want %d", job, sec, n, err, want)
			}
		}
		queue("a", 1)
		closeAt("j0", 2, 0) // neither full nor old enough
		queue("b", 2)
		queue("c", 3)
		closeAt("j1", 3, 2) // full: two of three
		closeAt("j2", 4, 0) // one left, its wait not over
		closeAt("j2", 11, 1)
		jobs, err := f.st.InferenceJobs(f.ctx, m)
		if err != nil || len(jobs) != 2 || jobs[0].ID != "j1" || jobs[0].State != pipeline.InferenceJobClosed || jobs[0].Requests != 2 {
			t.Fatalf("jobs %+v, %v", jobs, err)
		}
		if ok, err := f.st.AdvanceInferenceJob(f.ctx, m, "j1", pipeline.InferenceJobClosed, pipeline.InferenceJobUploaded, map[string]string{"file_id": "f1"}); err != nil || !ok {
			t.Fatalf("advance j1: %v, %v", ok, err)
		}
		if ok, err := f.st.AdvanceInferenceJob(f.ctx, m, "j1", pipeline.InferenceJobClosed, pipeline.InferenceJobUploaded, map[string]string{"file_id": "f2"}); err != nil || ok {
			t.Fatalf("advanced j1 twice from closed: %v, %v", ok, err)
		}
		if ok, err := f.st.AdvanceInferenceJob(f.ctx, m, "j1", pipeline.InferenceJobUploaded, pipeline.InferenceJobSubmitted, map[string]string{"batch_id": "b1"}); err != nil || !ok {
			t.Fatalf("submit j1: %v, %v", ok, err)
		}
		lines, err := f.st.InferenceJobLines(f.ctx, m, "j1")
		if err != nil || len(lines) != 2 {
			t.Fatalf("j1's lines %v, %v", lines, err)
		}
		var requeue []string
		for id := range lines {
			requeue = append(requeue, id)
		}
		requeue = requeue[:1] // the other was answered
		if ok, err := f.st.FinishInferenceJob(f.ctx, m, "j1", pipeline.InferenceJobSubmitted, pipeline.InferenceJobRequeued, requeue, at(12)); err != nil || !ok {
			t.Fatalf("requeue j1: %v, %v", ok, err)
		}
		if ok, err := f.st.FinishInferenceJob(f.ctx, m, "j1", pipeline.InferenceJobSubmitted, pipeline.InferenceJobDone, nil, at(12)); err != nil || ok {
			t.Fatalf("finished j1 twice: %v, %v", ok, err)
		}
		closeAt("j3", 21, 0) // the requeued request, whose wait starts again
		closeAt("j3", 22, 1)
		jobs, _ = f.st.InferenceJobs(f.ctx, m)
		if len(jobs) != 2 || jobs[0].ID != "j2" || jobs[1].ID != "j3" {
			t.Fatalf("jobs after the requeue %+v", jobs)
		}
		if lines, _ := f.st.InferenceJobLines(f.ctx, m, "j3"); lines[requeue[0]] == "" {
			t.Fatalf("j3 does not hold the requeued %s: %v", requeue[0], lines)
		}
	}},
	{"a_models_open_batch_and_its_jobs_of_the_last_day_are_listed", func(t *testing.T, f *fixture) {
		const m = "openai:m"
		if q, err := f.st.InferenceQueue(f.ctx, m); err != nil || q != (store.InferenceQueue{}) {
			t.Fatalf("the queue of a model never used: %+v, %v", q, err)
		}
		for i, id := range []string{"a", "b", "c"} {
			if err := f.st.QueueInference(f.ctx, m, id, []byte(`{}`), at(1+i)); err != nil {
				t.Fatal(err)
			}
		}
		if q, err := f.st.InferenceQueue(f.ctx, m); err != nil || q.Waiting != 3 || !q.Since.Equal(at(1)) {
			t.Fatalf("the open batch %+v, %v; want 3 waiting since %v", q, err, at(1))
		}
		bounds := store.InferenceBounds{MaxRequests: 2, MaxBytes: 1 << 20, MaxWait: time.Second}
		for _, job := range []string{"j1", "j2"} {
			if _, err := f.st.CloseInferenceBatch(f.ctx, m, job, bounds, at(5)); err != nil {
				t.Fatal(err)
			}
		}
		if q, _ := f.st.InferenceQueue(f.ctx, m); q != (store.InferenceQueue{}) {
			t.Fatalf("the open batch once closed: %+v", q)
		}
		for _, job := range []string{"j1", "j2"} {
			f.st.AdvanceInferenceJob(f.ctx, m, job, pipeline.InferenceJobClosed, pipeline.InferenceJobUploaded, map[string]string{"file_id": "f-" + job})
			f.st.AdvanceInferenceJob(f.ctx, m, job, pipeline.InferenceJobUploaded, pipeline.InferenceJobSubmitted, map[string]string{"batch_id": "b-" + job})
		}
		if ok, err := f.st.FinishInferenceJob(f.ctx, m, "j1", pipeline.InferenceJobSubmitted, pipeline.InferenceJobDone, nil, at(8)); err != nil || !ok {
			t.Fatalf("finish j1: %v, %v", ok, err)
		}
		ended, err := f.st.EndedInferenceJobs(f.ctx, m)
		if err != nil || len(ended) != 1 {
			t.Fatalf("ended jobs %+v, %v", ended, err)
		}
		if e := ended[0]; e.ID != "j1" || e.State != pipeline.InferenceJobDone || e.Requests != 2 || e.FileID != "f-j1" || e.BatchID != "b-j1" ||
			!e.ClosedAt.Equal(at(5)) || !e.EndedAt.Equal(at(8)) {
			t.Fatalf("the ended job %+v", e)
		}
		f.rdb.Del(f.ctx, f.prefix+":inference:{"+m+"}:job:j1") // its day is over
		if ended, _ := f.st.EndedInferenceJobs(f.ctx, m); len(ended) != 0 {
			t.Fatalf("a job whose record is gone is listed: %+v", ended)
		}
		if jobs, _ := f.st.InferenceJobs(f.ctx, m); len(jobs) != 1 || jobs[0].ID != "j2" || !jobs[0].EndedAt.IsZero() {
			t.Fatalf("unfinished jobs %+v", jobs)
		}
	}},
	{"a_batchers_lease_is_one_holders_until_it_runs_out", func(t *testing.T, f *fixture) {
		for _, c := range []struct {
			owner string
			want  bool
		}{{"w1", true}, {"w2", false}, {"w1", true}} {
			if held, err := f.st.TakeBatcherLease(f.ctx, "openai:m", c.owner, time.Minute); err != nil || held != c.want {
				t.Fatalf("%s takes the lease: %v, %v; want %v", c.owner, held, err, c.want)
			}
		}
	}},
	{"a_retrying_step_keeps_its_attempt_counted_and_parks_under_the_next", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		if err := f.st.AwaitInference(f.ctx, "r1", 0, "w1", "r1.0.2", "openai:m", true, at(2)); err != nil {
			t.Fatalf("AwaitInference: %v", err)
		}
		if run := f.run(t, "r1"); run.Attempts != 1 || run.StepState != pipeline.StepAwaitingInference {
			t.Fatalf("after a counted park: %+v", run)
		}
		if took, err := f.st.AnswerInference(f.ctx, "r1", 0, "r1.0.2", []byte(`{}`), at(3)); err != nil || !took {
			t.Fatalf("the retry's answer was not taken: %v, %v", took, err)
		}
		run, err := f.st.ClaimStep(f.ctx, "r1", 0, lease("w2", at(40)), at(4))
		if err != nil || run.Attempts != 2 {
			t.Fatalf("the claim of the retry's answer: %+v, %v; want attempt 2, as its custom_id says", run, err)
		}
	}},
	{"a_request_is_wanted_while_its_run_is_at_its_step", func(t *testing.T, f *fixture) {
		f.claimed(t, "r1")
		f.cancelledAfterClaim(t, "r2")
		wanted, err := f.st.InferenceWanted(f.ctx, []store.InferenceStep{{RunID: "r1", Step: 0}, {RunID: "r1", Step: 1}, {RunID: "r2", Step: 0}, {RunID: "gone", Step: 0}})
		if err != nil || !slices.Equal(wanted, []bool{true, false, false, false}) {
			t.Fatalf("InferenceWanted = %v, %v; want only r1's step 0", wanted, err)
		}
	}},
	{"a_run_held_by_a_batch_mode_agent_is_marked_live_and_no_other", func(t *testing.T, f *fixture) {
		f.created(t, "r1")
		f.cancelledAfterClaim(t, "r2")
		for _, c := range []struct {
			run    string
			agents []string
			want   bool
		}{{"r1", []string{"other"}, false}, {"r2", []string{"assistant"}, false}, {"gone", []string{"assistant"}, false}, {"r1", []string{"other", "assistant"}, true}} {
			if marked, err := f.st.MarkLive(f.ctx, c.run, c.agents); err != nil || marked != c.want {
				t.Fatalf("MarkLive(%s, %v) = %v, %v; want %v", c.run, c.agents, marked, err, c.want)
			}
		}
		if run := f.run(t, "r1"); run.Inference != pipeline.InferenceLive {
			t.Fatalf("marked run's inference %q", run.Inference)
		}
		if n := f.rdb.Exists(f.ctx, f.prefix+":{gone}:run").Val(); n != 0 {
			t.Fatal("marking a missing run wrote a run hash")
		}
	}},
	{"a_runs_inference_mode_is_kept", func(t *testing.T, f *fixture) {
		run := newRun("r1")
		run.Inference = pipeline.InferenceBatch
		f.create(t, run, t0)
		if got := f.run(t, "r1"); got.Inference != pipeline.InferenceBatch {
			t.Fatalf("stored inference %q", got.Inference)
		}
	}},
}

// cancelledAfterClaim creates run id, has w1 claim its step 0 and cancels
// it at 3s.
func (f *fixture) cancelledAfterClaim(t *testing.T, id string) {
	t.Helper()
	f.claimed(t, id)
	if _, err := f.st.CancelRun(f.ctx, id, "d1", "test", "stop", at(3)); err != nil {
		t.Fatalf("CancelRun: %v", err)
	}
}
