package model_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/model"
)

func TestRetryAfter_reads_seconds_and_dates(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		"0":                             0,
		"soon":                          0,
		"Wed, 25 Nov 2026 12:00:30 GMT": 30 * time.Second,
		"Wed, 25 Nov 2026 11:00:00 GMT": 0, // past
	} {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := model.RetryAfter(h, now); got != want {
			t.Errorf("Retry-After %q = %s, want %s", v, got, want)
		}
	}
}
