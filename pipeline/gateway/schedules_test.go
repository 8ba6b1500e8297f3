package gateway_test

import (
	"net/http"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

func TestSchedules_a_create_reports_every_problem_at_once(t *testing.T) {
	h := newHarness(t)
	body := h.post("/v1/schedules", `{"schedule_id": "bad id", "every": "soon", "timezone": "Mars/Olympus", "overlap": "queue",
		"run": {"run_id": "fixed", "agent": "nobody", "input": "hi", "start_at": "2030-01-01T00:00:00Z"}}`).wantError(t,
		http.StatusBadRequest, gateway.CodeInvalidRequest,
		`schedule_id "bad id"`,
		`every "soon" is not a duration`,
		`timezone "Mars/Olympus"`,
		`overlap "queue"`,
		`run: agent "nobody" is not configured`,
		`run: run_id is not allowed`,
		`run: start_at is not allowed`,
	)
	if len(body.Error.Details) != 7 {
		t.Errorf("details %q, want 7 problems", body.Error.Details)
	}
	for name, tc := range map[string]struct{ body, mention string }{
		"no timer":      {`{"run": {"agent": "assistant", "input": "hi"}}`, `give "cron" or "every"`},
		"a bad cron":    {`{"cron": "99 * * * *", "run": {"agent": "assistant", "input": "hi"}}`, `cron "99 * * * *"`},
		"no time":       {`{"cron": "0 0 30 2 *", "run": {"agent": "assistant", "input": "hi"}}`, "matches no time"},
		"a bad zone":    {`{"cron": "@daily", "timezone": "Mars/Olympus", "run": {"agent": "assistant", "input": "hi"}}`, `timezone "Mars/Olympus"`},
		"a bad overlap": {`{"every": "1m", "overlap": "queue", "run": {"agent": "assistant", "input": "hi"}}`, `overlap "queue"`},
		"no run":        {`{"every": "1m"}`, "run is missing"},
		"an unknown":    {`{"every": "1m", "colour": "blue", "run": {"agent": "assistant", "input": "hi"}}`, `unknown field "colour"`},
	} {
		t.Run(name, func(t *testing.T) {
			h.post("/v1/schedules", tc.body).wantError(t, http.StatusBadRequest, gateway.CodeInvalidRequest, tc.mention)
		})
	}
	var list gateway.ScheduleList
	if h.get("/v1/schedules").want(t, http.StatusOK, &list); len(list.Schedules) != 0 {
		t.Errorf("invalid creates made schedules: %+v", list.Schedules)
	}
}

func TestSchedules_the_same_create_again_is_a_replay_and_another_a_conflict(t *testing.T) {
	h := newHarness(t)
	body := `{"schedule_id": "s-1", "every": "1h", "run": {"agent": "assistant", "input": "hi"}}`
	var first, again gateway.ScheduleView
	h.post("/v1/schedules", body).want(t, http.StatusCreated, &first)
	h.post("/v1/schedules", body).want(t, http.StatusOK, &again)
	if first.ScheduleID != "s-1" || first.Overlap != "skip" || first.NextTick.IsZero() || !again.NextTick.Equal(first.NextTick) {
		t.Errorf("created %+v, replayed %+v", first, again)
	}
	h.post("/v1/schedules", `{"schedule_id": "s-1", "every": "2h", "run": {"agent": "assistant", "input": "hi"}}`).
		wantError(t, http.StatusConflict, gateway.CodeConflict, "s-1")
}

func TestSchedules_a_key_sees_and_changes_its_tenants_schedules_only(t *testing.T) {
	h := authHarness(t)
	if code := h.as("writer-a", http.MethodPost, "/v1/schedules", `{"schedule_id": "a-s", "every": "1h", "run": {"agent": "assistant", "input": "hi"}}`); code != http.StatusCreated {
		t.Fatalf("create as writer-a: %d", code)
	}
	for _, c := range []struct {
		key, method, path string
		want              int
	}{
		{"reader-a", http.MethodGet, "/v1/schedules/a-s", http.StatusOK},
		{"all-b", http.MethodGet, "/v1/schedules/a-s", http.StatusNotFound},
		{"all-b", http.MethodPost, "/v1/schedules/a-s/pause", http.StatusNotFound},
		{"all-b", http.MethodPost, "/v1/schedules/a-s/trigger", http.StatusNotFound},
		{"all-b", http.MethodDelete, "/v1/schedules/a-s", http.StatusNotFound},
		{"reader-a", http.MethodPost, "/v1/schedules/a-s/pause", http.StatusForbidden},
		{"writer-a", http.MethodPost, "/v1/schedules/a-s/pause", http.StatusOK},
		{"admin", http.MethodDelete, "/v1/schedules/a-s", http.StatusNoContent},
	} {
		if got := h.as(c.key, c.method, c.path, ""); got != c.want {
			t.Errorf("%s %s as %s: %d, want %d", c.method, c.path, c.key, got, c.want)
		}
	}
}
