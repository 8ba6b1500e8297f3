package pipeline

// InferenceJobState is where a batch job of a model stands: a set of step
// requests taken from the model's open batch and sent to the provider's
// Batch API as one file (batch inference, ADR 0071). Not to be confused
// with a batch of runs (POST /v1/runs/batch).
type InferenceJobState string

// The states of an inference job, in order.
const (
	InferenceJobClosed    InferenceJobState = "closed"    // its requests are taken from the open batch; nothing sent yet
	InferenceJobUploaded  InferenceJobState = "uploaded"  // its input file is at the provider (file_id)
	InferenceJobSubmitted InferenceJobState = "submitted" // the provider's batch exists (batch_id) and is polled
	InferenceJobDone      InferenceJobState = "done"      // every answer was handed to its step
	InferenceJobRequeued  InferenceJobState = "requeued"  // the batch failed; its unanswered requests went back to the open batch
)

// inferenceJobTransitions is the job's table: each step forward is one
// call to the provider whose result the record keeps; a submitted batch
// ends done or, failed, expired or cancelled at the provider, requeued; a
// closed job all of whose runs ended before its upload ends done, unsent.
var inferenceJobTransitions = map[InferenceJobState][]InferenceJobState{
	InferenceJobClosed:    {InferenceJobUploaded, InferenceJobDone},
	InferenceJobUploaded:  {InferenceJobSubmitted},
	InferenceJobSubmitted: {InferenceJobDone, InferenceJobRequeued},
}

// CanTransition reports whether the table allows from → to.
func (from InferenceJobState) CanTransition(to InferenceJobState) bool {
	for _, next := range inferenceJobTransitions[from] {
		if next == to {
			return true
		}
	}
	return false
}
