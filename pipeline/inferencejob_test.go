package pipeline_test

import (
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

// A job moves one provider call at a time and ends done or requeued; a
// closed job whose every request was dropped before its upload (their
// runs ended) ends done without a provider call (ADR 0072).
func TestInferenceJobState_moves_one_provider_call_at_a_time_and_ends_done_or_requeued(t *testing.T) {
	c, u, s := pipeline.InferenceJobClosed, pipeline.InferenceJobUploaded, pipeline.InferenceJobSubmitted
	d, r := pipeline.InferenceJobDone, pipeline.InferenceJobRequeued
	allowed := map[[2]pipeline.InferenceJobState]bool{{c, u}: true, {c, d}: true, {u, s}: true, {s, d}: true, {s, r}: true}
	all := []pipeline.InferenceJobState{c, u, s, d, r}
	for _, from := range all {
		for _, to := range all {
			want := allowed[[2]pipeline.InferenceJobState{from, to}]
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				if got := from.CanTransition(to); got != want {
					t.Fatalf("CanTransition = %v, want %v", got, want)
				}
			})
		}
	}
}

func TestStepState_a_step_awaiting_its_inference_is_only_woken_pending(t *testing.T) {
	p, i, tl, a := pipeline.StepPending, pipeline.StepInferring, pipeline.StepTools, pipeline.StepAwaitingInference
	allowed := map[[2]pipeline.StepState]bool{
		{p, i}: true, {i, i}: true, {i, tl}: true, {i, p}: true, {i, a}: true, {tl, p}: true, {a, p}: true,
	}
	all := []pipeline.StepState{p, i, tl, a}
	for _, from := range all {
		for _, to := range all {
			want := allowed[[2]pipeline.StepState{from, to}]
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				if got := from.CanTransition(to); got != want {
					t.Fatalf("CanTransition = %v, want %v", got, want)
				}
			})
		}
	}
}
