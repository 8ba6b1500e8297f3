package pipeline

import "fmt"

// InferenceMode is how a run's steps infer when its agent's model has a
// batch mode (ADR 0071, 0072): through the provider's Batch API, or live.
// A run that names none follows its model's setting batch.default.
type InferenceMode string

// The inference modes.
const (
	InferenceBatch InferenceMode = "batch" // the step's request joins its model's open batch
	InferenceLive  InferenceMode = "live"  // the step infers through the live API
)

// ParseInferenceMode returns the mode named s ("" is none: the model's
// default), or an error naming the modes there are.
func ParseInferenceMode(s string) (InferenceMode, error) {
	switch m := InferenceMode(s); m {
	case "", InferenceBatch, InferenceLive:
		return m, nil
	}
	return "", fmt.Errorf("inference mode %q: want %q or %q", s, InferenceBatch, InferenceLive)
}
