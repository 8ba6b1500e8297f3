package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/cli"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/schedule"
)

// scheduledRun is a run of GET /v1/runs a schedule started.
type scheduledRun struct {
	RunID      string             `json:"run_id"`
	Status     pipeline.RunStatus `json:"status"`
	ScheduleID string             `json:"schedule_id"`
	TickAt     time.Time          `json:"tick_at"`
	CreatedAt  time.Time          `json:"created_at"`
	UpdatedAt  time.Time          `json:"updated_at"`
}

// scheduleView is the part of a schedule's view the tests read.
type scheduleView struct {
	ScheduleID string    `json:"schedule_id"`
	Paused     bool      `json:"paused"`
	NextTick   time.Time `json:"next_tick"`
	LastRunID  string    `json:"last_run_id"`
}

// createSchedule posts a schedule of runs of agent assistant, each with
// its own script model (model, a JSON object), and the fields of spec.
func createSchedule(t *testing.T, base, id, model string, spec map[string]any) {
	t.Helper()
	body := map[string]any{"schedule_id": id, "run": map[string]any{"agent": "assistant", "input": "tick", "model": json.RawMessage(model)}}
	for k, v := range spec {
		body[k] = v
	}
	if code := httpDo(t, http.MethodPost, base+"/v1/schedules", body, nil); code != http.StatusCreated {
		t.Fatalf("create schedule %s: status %d", id, code)
	}
}

// everySecond creates a schedule every second per id → overlap policy,
// of runs of model, and waits until each has started n runs, all done.
func everySecond(t *testing.T, base, model string, n int, overlaps map[string]string) {
	t.Helper()
	for id, overlap := range overlaps {
		createSchedule(t, base, id, model, map[string]any{"every": "1s", "overlap": overlap})
	}
	for id := range overlaps {
		waitRunsOf(t, base, id, n)
	}
}

// runsOf lists the runs schedule id started, oldest tick first.
func runsOf(t *testing.T, base, id string) []scheduledRun {
	t.Helper()
	var list struct {
		Runs []scheduledRun `json:"runs"`
	}
	if code := httpDo(t, http.MethodGet, base+"/v1/runs?limit=500", nil, &list); code != http.StatusOK {
		t.Fatalf("list runs: status %d", code)
	}
	var out []scheduledRun
	for _, r := range list.Runs {
		if r.ScheduleID == id {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b scheduledRun) int { return a.TickAt.Compare(b.TickAt) })
	return out
}

// waitRunsOf polls until schedule id has started at least n runs, all
// done, and returns them.
func waitRunsOf(t *testing.T, base, id string, n int) []scheduledRun {
	t.Helper()
	var runs []scheduledRun
	testinfra.Eventually(t, 60*time.Second, func() bool {
		runs = runsOf(t, base, id)
		return len(runs) >= n && !slices.ContainsFunc(runs, func(r scheduledRun) bool { return r.Status != pipeline.RunDone })
	}, func() string { return fmt.Sprintf("schedule %s: %d runs, want %d done: %+v", id, len(runs), n, runs) })
	return runs
}

// pause pauses schedule id and returns its runs once all are done.
func pause(t *testing.T, base, id string) []scheduledRun {
	t.Helper()
	if code := httpDo(t, http.MethodPost, base+"/v1/schedules/"+id+"/pause", nil, nil); code != http.StatusOK {
		t.Fatalf("pause %s: status %d", id, code)
	}
	return waitRunsOf(t, base, id, 1)
}

// checkTicks fails unless each run is its tick's (id, schedule_id) and
// the ticks are consecutive seconds: none missed, none twice.
func checkTicks(t *testing.T, id string, runs []scheduledRun) {
	t.Helper()
	for i, r := range runs {
		if want := schedule.FiringOf(id, r.TickAt, false).RunID; r.RunID != want || r.ScheduleID != id {
			t.Errorf("run %s of tick %s (schedule %q), want run %s of schedule %s", r.RunID, r.TickAt, r.ScheduleID, want, id)
		}
		if i > 0 && r.TickAt.Sub(runs[i-1].TickAt) != time.Second {
			t.Errorf("tick %s follows tick %s: want one each second, none missed or repeated", r.TickAt, runs[i-1].TickAt)
		}
	}
}

// scheduleStacks runs a gateway, a tool worker and a step worker on one
// stack, and a second step worker on another stack on the same Kafka and
// Redis; it returns the gateway's URL and the stop of each step worker.
func scheduleStacks(t *testing.T) (string, *app.Stack, []func()) {
	t.Helper()
	in := newInfra(t)
	cfg := parseConfig(t, testConfig)
	a, b := connect(t, in, cfg), connect(t, in, cfg)
	start(t, func(ctx context.Context) error { return a.RunToolWorker(ctx, nil) })
	stops := []func(){start(t, a.RunStepWorker), start(t, b.RunStepWorker)}
	return serve(t, a), a, stops
}

const quickModel = `{"provider": "script", "turns": [{"text": "done"}]}`

// TestSchedule_every_second_fires_once_per_tick_with_two_step_workers runs
// a schedule every second under two step workers' sweepers: each tick
// starts one run, named by the tick, carrying the schedule id and tick.
func TestSchedule_every_second_fires_once_per_tick_with_two_step_workers(t *testing.T) {
	base, _, _ := scheduleStacks(t)
	createSchedule(t, base, "each", quickModel, map[string]any{"every": "1s", "overlap": "allow_all"})
	waitRunsOf(t, base, "each", 4)
	runs := pause(t, base, "each")
	checkTicks(t, "each", runs)
}

// TestSchedule_a_tick_claimed_by_a_look_that_died_still_starts_its_run_once
// leaves a schedule as a look that died after taking a tick and before
// creating its run leaves it (the tick's run as firing): the sweepers
// create that run, once, and clear the firing.
func TestSchedule_a_tick_claimed_by_a_look_that_died_still_starts_its_run_once(t *testing.T) {
	base, stack, _ := scheduleStacks(t)
	createSchedule(t, base, "crashed", quickModel, map[string]any{"every": "1h"})
	ctx := t.Context()
	sc, err := stack.Store.GetSchedule(ctx, "crashed")
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Now().UTC().Truncate(time.Second)
	fr := schedule.FiringOf(sc.ID, tick, false)
	sc.Firing, sc.LastRun = []schedule.Firing{fr}, fr.RunID
	if _, written, err := stack.Store.PutSchedule(ctx, sc, time.Now()); err != nil || !written {
		t.Fatalf("claim a tick: written %v, %v", written, err)
	}

	runs := waitRunsOf(t, base, "crashed", 1)
	if len(runs) != 1 || runs[0].RunID != fr.RunID || !runs[0].TickAt.Equal(tick) {
		t.Errorf("runs %+v, want the claimed tick's run %s alone", runs, fr.RunID)
	}
	testinfra.Eventually(t, 10*time.Second, func() bool {
		got, err := stack.Store.GetSchedule(ctx, "crashed")
		return err == nil && len(got.Firing) == 0
	}, func() string { return "the firing is not cleared" })
}

// slowModel answers after 2.5s: a run of it overlaps the next two ticks
// of a schedule every second.
const slowModel = `{"provider": "script", "turns": [{"text": "done", "delay_ms": 2500}]}`

// TestSchedule_overlap_skip_drops_and_buffer_one_delays_the_ticks_of_a_busy_run
// runs schedules every second whose runs take longer than a tick: under
// skip a tick while the last run is busy starts nothing (each run's tick
// comes after the previous run ended); under buffer_one one such tick
// waits and starts when the last run ends (a run's tick before the
// previous run's end), and runs never overlap under either.
func TestSchedule_overlap_skip_drops_and_buffer_one_delays_the_ticks_of_a_busy_run(t *testing.T) {
	base, _, _ := scheduleStacks(t)
	everySecond(t, base, slowModel, 3, map[string]string{"skip": "skip", "buffer": "buffer_one"})
	skipped, buffered := pause(t, base, "skip"), pause(t, base, "buffer")

	for i := 1; i < len(skipped); i++ {
		if prev, r := skipped[i-1], skipped[i]; r.TickAt.Before(prev.UpdatedAt.Truncate(time.Second)) || r.CreatedAt.Before(prev.UpdatedAt) {
			t.Errorf("skip: run %s (tick %s, created %s) while run %s was busy (until %s)", r.RunID, r.TickAt, r.CreatedAt, prev.RunID, prev.UpdatedAt)
		}
	}
	waited := 0
	for i := 1; i < len(buffered); i++ {
		prev, r := buffered[i-1], buffered[i]
		if r.CreatedAt.Before(prev.UpdatedAt) {
			t.Errorf("buffer_one: run %s created %s while run %s was busy (until %s)", r.RunID, r.CreatedAt, prev.RunID, prev.UpdatedAt)
		}
		if r.TickAt.Before(prev.UpdatedAt) {
			waited++
		}
	}
	if waited == 0 {
		t.Errorf("buffer_one: no tick waited for a busy run: %+v", buffered)
	}
}

// TestSchedule_catches_up_after_the_step_workers_stop_as_its_overlap_says
// stops every step worker for a few ticks of two schedules every second,
// then starts one again: allow_all fires each missed tick, skip only the
// latest.
func TestSchedule_catches_up_after_the_step_workers_stop_as_its_overlap_says(t *testing.T) {
	base, stack, stops := scheduleStacks(t)
	everySecond(t, base, quickModel, 2, map[string]string{"all": "allow_all", "latest": "skip"})
	for _, stop := range stops {
		stop()
	}
	stoppedAt := time.Now()
	before := len(runsOf(t, base, "all"))
	testinfra.Eventually(t, 10*time.Second, func() bool { return time.Since(stoppedAt) > 3500*time.Millisecond },
		func() string { return "the clock did not move" })
	start(t, stack.RunStepWorker)
	waitRunsOf(t, base, "all", before+4)
	all, latest := pause(t, base, "all"), pause(t, base, "latest")

	checkTicks(t, "all", all)
	gaps := 0
	for i := 1; i < len(latest); i++ {
		if d := latest[i].TickAt.Sub(latest[i-1].TickAt); d > time.Second {
			gaps++
			if d < 3*time.Second {
				t.Errorf("skip: ticks %s then %s: the missed ticks of the stop, but its latest, should be dropped", latest[i-1].TickAt, latest[i].TickAt)
			}
		}
	}
	if gaps != 1 {
		t.Errorf("skip: %d gaps in the ticks, want the one of the stop: %+v", gaps, latest)
	}
}

// TestSchedule_is_paused_resumed_triggered_and_deleted_over_HTTP drives a
// schedule whose timer never ticks in the test through its routes.
func TestSchedule_is_paused_resumed_triggered_and_deleted_over_HTTP(t *testing.T) {
	base, _, _ := scheduleStacks(t)
	createSchedule(t, base, "manual", quickModel, map[string]any{"cron": "0 0 1 1 *", "timezone": "Europe/Paris"})

	var trig struct {
		RunID string `json:"run_id"`
	}
	if code := httpDo(t, http.MethodPost, base+"/v1/schedules/manual/trigger", nil, &trig); code != http.StatusAccepted {
		t.Fatalf("trigger: status %d", code)
	}
	runs := waitRunsOf(t, base, "manual", 1)
	if len(runs) != 1 || runs[0].RunID != trig.RunID || !strings.HasPrefix(trig.RunID, "manual-now-") {
		t.Errorf("runs %+v after a trigger answered %q", runs, trig.RunID)
	}
	for range 2 { // a trigger that names its run, and the same again (a client's retry)
		var again struct {
			RunID string `json:"run_id"`
		}
		if code := httpDo(t, http.MethodPost, base+"/v1/schedules/manual/trigger", map[string]any{"run_id": "manual-by-hand"}, &again); code != http.StatusAccepted || again.RunID != "manual-by-hand" {
			t.Fatalf("trigger with run_id: status %d, run %q", code, again.RunID)
		}
	}
	if code := httpDo(t, http.MethodPost, base+"/v1/schedules/manual/trigger", map[string]any{"run_id": "a/b"}, nil); code != http.StatusBadRequest {
		t.Errorf("trigger with run_id a/b: status %d, want 400", code)
	}
	if runs := waitRunsOf(t, base, "manual", 2); len(runs) != 2 {
		t.Errorf("runs %+v after a trigger and a named trigger twice, want two", runs)
	}

	var v scheduleView
	if httpDo(t, http.MethodPost, base+"/v1/schedules/manual/pause", nil, &v); !v.Paused || !v.NextTick.IsZero() || v.LastRunID != "manual-by-hand" {
		t.Errorf("paused: %+v, want paused, no next tick, last run manual-by-hand", v)
	}
	if httpDo(t, http.MethodPost, base+"/v1/schedules/manual/resume", nil, &v); v.Paused || v.NextTick.Month() != time.December {
		t.Errorf("resumed: %+v, want its next tick on 1 January at midnight in Paris (31 December UTC)", v)
	}
	var list struct {
		Schedules []scheduleView `json:"schedules"`
	}
	if httpDo(t, http.MethodGet, base+"/v1/schedules", nil, &list); len(list.Schedules) != 1 || list.Schedules[0].ScheduleID != "manual" {
		t.Errorf("list: %+v", list)
	}
	if code := httpDo(t, http.MethodDelete, base+"/v1/schedules/manual", nil, nil); code != http.StatusNoContent {
		t.Errorf("delete: status %d", code)
	}
	for _, path := range []string{"/v1/schedules/manual", "/v1/schedules/manual/trigger"} {
		method := map[bool]string{true: http.MethodGet, false: http.MethodPost}[path == "/v1/schedules/manual"]
		if code := httpDo(t, method, base+path, nil, nil); code != http.StatusNotFound {
			t.Errorf("%s %s after delete: status %d, want 404", method, path, code)
		}
	}
	if got := runsOf(t, base, "manual"); len(got) != 2 {
		t.Errorf("the deleted schedule's runs: %+v, want its two runs kept", got)
	}
}

// TestCLI_schedules_create_list_trigger_pause_resume_and_delete drives a
// schedule through `stepwise schedules` against a gateway.
func TestCLI_schedules_create_list_trigger_pause_resume_and_delete(t *testing.T) {
	base, _, _ := scheduleStacks(t)
	t.Setenv(cli.EnvGateway, base)
	for _, step := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"schedules", "create", "--id", "nightly", "--cron", "0 3 * * *", "--timezone", "Asia/Tokyo", "--agent", "assistant", "--input", "report"}, cli.ExitOK, "schedule nightly: 0 3 * * * (Asia/Tokyo), next tick"},
		{[]string{"schedules", "create", "--id", "bad", "--every", "1ms", "--agent", "assistant", "--input", "x"}, cli.ExitFail, ""},
		{[]string{"schedules", "list"}, cli.ExitOK, "nightly   0 3 * * * (Asia/Tokyo)  skip     assistant"},
		{[]string{"schedules", "trigger", "nightly"}, cli.ExitOK, "schedule nightly started run nightly-now-"},
		{[]string{"schedules", "trigger", "--run-id", "nightly-by-hand", "nightly"}, cli.ExitOK, "schedule nightly started run nightly-by-hand"},
		{[]string{"schedules", "trigger", "--run-id", "nightly-by-hand", "nightly"}, cli.ExitOK, "schedule nightly started run nightly-by-hand"},
		{[]string{"schedules", "pause", "nightly"}, cli.ExitOK, "schedule nightly is paused"},
		{[]string{"schedules", "resume", "nightly"}, cli.ExitOK, "schedule nightly is running, next tick"},
		{[]string{"schedules", "get", "nightly"}, cli.ExitOK, `"last_run_id": "nightly-by-hand"`},
		{[]string{"schedules", "delete", "nightly"}, cli.ExitOK, "schedule nightly deleted"},
		{[]string{"schedules", "get", "nightly"}, cli.ExitFail, ""},
		{[]string{"schedules", "rename", "nightly"}, cli.ExitUsage, ""},
	} {
		code, out, errs := stepwiseCLI(t, step.args...)
		if code != step.code || !strings.Contains(out, step.out) {
			t.Errorf("stepwise %s: exit %d, out %q, errors %q; want exit %d and %q", strings.Join(step.args, " "), code, out, errs, step.code, step.out)
		}
	}
}
