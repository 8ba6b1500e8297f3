package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A run may bring its own script model, but not one that holds an
// inference slot for as long as it likes: a turn that waits past
// runs.max_script_delay is refused at create, naming the field and the cap.
func TestFairness_a_runs_script_that_waits_past_the_cap_is_refused(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, testConfig))
	base := serve(t, stack)
	body, _ := json.Marshal(map[string]any{"run_id": "r-sleepy", "agent": "assistant", "input": "go",
		"model": json.RawMessage(`{"provider":"script","turns":[{"text":"zzz","delay_ms":99999999999999}]}`)})
	res, err := http.Post(base+"/v1/runs", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(answer), "turns[0]") ||
		!strings.Contains(string(answer), "delay_ms 99999999999999") || !strings.Contains(string(answer), "runs.max_script_delay (10s)") {
		t.Fatalf("create: %d %s, want 400 naming turns[0].delay_ms and runs.max_script_delay (10s)", res.StatusCode, answer)
	}
	if code := httpDo(t, http.MethodGet, base+"/v1/runs/r-sleepy", nil, nil); code != http.StatusNotFound {
		t.Fatalf("the refused run was kept: GET answers %d", code)
	}
}
