package app_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// TestStartAt_delays_the_first_step_of_a_run_created_over_HTTP_and_Kafka
// creates runs whose start_at is a few seconds ahead, by POST /v1/runs and
// on the run-requests topic: each is created at once, stays created, and
// is done only after its start_at.
func TestStartAt_delays_the_first_step_of_a_run_created_over_HTTP_and_Kafka(t *testing.T) {
	stack, base := requestStack(t, testConfig)
	at := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)
	body := map[string]any{"run_id": "later-http", "agent": "assistant", "input": "go", "start_at": at.Format(time.RFC3339)}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs", body, nil); code != http.StatusCreated {
		t.Fatalf("create a delayed run: status %d", code)
	}
	requestRun(t, stack, "later-kafka", fmt.Sprintf(`{"v":1,"run_id":"later-kafka","agent":"assistant","input":"go","start_at":%q}`, at.Format(time.RFC3339)))

	for _, id := range []string{"later-http", "later-kafka"} {
		testinfra.Eventually(t, 20*time.Second, func() bool {
			return httpDo(t, http.MethodGet, base+"/v1/runs/"+id, nil, nil) == http.StatusOK
		}, func() string { return "run " + id + " is not created" })
		v, read := getRun(t, base, id), time.Now()
		if read.Before(at) && (v.Status != pipeline.RunCreated || !v.StartAt.Equal(at)) {
			t.Fatalf("run %s before its start_at: %s with start_at %s, want created with %s", id, v.Status, v.StartAt, at)
		}
	}
	for _, id := range []string{"later-http", "later-kafka"} {
		waitDone(t, base, id, 30*time.Second)
		if v := getRun(t, base, id); v.UpdatedAt.Before(at) {
			t.Errorf("run %s was done at %s, before its start_at %s", id, v.UpdatedAt, at)
		}
	}
}
