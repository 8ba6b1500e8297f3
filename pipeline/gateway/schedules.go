package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/pipeline/schedule"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// MaxScheduleIDLength is the longest schedule_id a client may choose: its
// runs are named "<schedule_id>-<tick>", within MaxRunIDLength.
const MaxScheduleIDLength = 96

// CreateScheduleRequest is the body of POST /v1/schedules: one of Cron and
// Every (a Go duration, at least 1s), Timezone (IANA, default UTC),
// Overlap (skip, buffer_one or allow_all; default skip), CatchupWindow (a
// Go duration; default a year) and Run, the body of POST /v1/runs each
// tick creates (without run_id and start_at).
type CreateScheduleRequest struct {
	ScheduleID    string          `json:"schedule_id,omitempty"`
	Cron          string          `json:"cron,omitempty"`
	Every         string          `json:"every,omitempty"`
	Timezone      string          `json:"timezone,omitempty"`
	Overlap       string          `json:"overlap,omitempty"`
	CatchupWindow string          `json:"catchup_window,omitempty"`
	Run           json.RawMessage `json:"run"`
}

// ScheduleView is a schedule as the API shows it.
type ScheduleView struct {
	ScheduleID    string           `json:"schedule_id"`
	Cron          string           `json:"cron,omitempty"`
	Every         string           `json:"every,omitempty"`
	Timezone      string           `json:"timezone,omitempty"`
	Overlap       schedule.Overlap `json:"overlap"`
	CatchupWindow string           `json:"catchup_window"`
	Run           RunTemplateView  `json:"run"`
	Paused        bool             `json:"paused"`
	NextTick      time.Time        `json:"next_tick,omitzero"`
	BufferedTick  time.Time        `json:"buffered_tick,omitzero"`
	LastRunID     string           `json:"last_run_id,omitempty"`
	CreatedAt     time.Time        `json:"created_at"`
	UpdatedAt     time.Time        `json:"updated_at"`
}

// RunTemplateView is the run each tick of a schedule creates.
type RunTemplateView struct {
	Agent    string          `json:"agent"`
	Input    any             `json:"input"`
	Model    json.RawMessage `json:"model,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// ScheduleList is the answer of GET /v1/schedules.
type ScheduleList struct {
	Schedules []ScheduleView `json:"schedules"`
}

// TriggerRequest is the optional body of POST /v1/schedules/{id}/trigger.
// RunID names the run, which makes the trigger idempotent as POST
// /v1/runs's run_id does: the same trigger again answers with that run.
type TriggerRequest struct {
	RunID string `json:"run_id,omitempty"`
}

// TriggerResponse is the answer of POST /v1/schedules/{id}/trigger.
type TriggerResponse struct {
	ScheduleID string `json:"schedule_id"`
	RunID      string `json:"run_id"`
}

func scheduleViewOf(sc schedule.Schedule) ScheduleView {
	v := ScheduleView{
		ScheduleID: sc.ID, Cron: sc.Spec.Cron, Timezone: sc.Spec.Timezone, Overlap: sc.Spec.Overlap,
		CatchupWindow: sc.Spec.CatchupWindow.String(),
		Run:           RunTemplateView{Agent: sc.Run.Agent, Input: sc.Run.Input, Model: sc.Run.Model, Metadata: sc.Run.Metadata},
		Paused:        sc.Paused, BufferedTick: sc.Buffered, LastRunID: sc.LastRun,
		CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt,
	}
	if sc.Spec.Every > 0 {
		v.Every = sc.Spec.Every.String()
	}
	if !sc.Paused {
		v.NextTick = sc.Next
	}
	return v
}

// createSchedule serves POST /v1/schedules: 201 with the new schedule,
// 200 for the same request again, 409 for its id with another request.
func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) {
	body, ae := jsonBody(w, r, s.cfg.MaxBodyBytes)
	if ae != nil {
		writeError(w, ae)
		return
	}
	sc, ae := s.parseSchedule(body, principalOf(r).Tenant)
	if ae != nil {
		writeError(w, ae)
		return
	}
	got, created, err := s.cfg.Store.CreateSchedule(r.Context(), sc, s.cfg.Now())
	if errors.Is(err, store.ErrConflict) {
		writeError(w, apiErr(http.StatusConflict, CodeConflict,
			fmt.Sprintf("schedule_id %q exists with a different request; choose another schedule_id or send the same request", sc.ID)))
		return
	}
	if err != nil {
		s.fail(w, r, "create schedule "+sc.ID, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, scheduleViewOf(got))
}

// parseSchedule validates a create body, every problem at once, and
// returns the schedule it asks for, tenant's, its first tick after now.
func (s *Server) parseSchedule(body []byte, tenant string) (schedule.Schedule, *apiError) {
	var req CreateScheduleRequest
	if err := decodeStrict(body, &req, false); err != nil {
		return schedule.Schedule{}, invalid("%v", err)
	}
	var problems []string
	id := req.ScheduleID
	if id == "" {
		id = uuid.NewString()
	} else if p := idProblem("schedule_id", id, MaxScheduleIDLength); p != "" {
		problems = append(problems, p)
	}
	spec := schedule.Spec{Cron: req.Cron, Timezone: req.Timezone, Overlap: schedule.Overlap(req.Overlap)}
	for _, d := range []struct {
		name, text string
		into       *time.Duration
	}{{"every", req.Every, &spec.Every}, {"catchup_window", req.CatchupWindow, &spec.CatchupWindow}} {
		if d.text == "" {
			continue
		}
		v, err := time.ParseDuration(d.text)
		if err != nil {
			problems = append(problems, fmt.Sprintf(`%s %q is not a duration like "30s", "5m" or "1h"`, d.name, d.text))
			v = time.Minute // checked above: the timer checks the rest as if it were valid
		}
		*d.into = v
	}
	timer, err := schedule.NewTimer(spec)
	switch {
	case err != nil:
		problems = append(problems, strings.Split(err.Error(), "\n")...)
	case timer.Next(s.cfg.Now()).IsZero():
		problems = append(problems, fmt.Sprintf("cron %q matches no time in the next five years", spec.Cron))
	}
	tmpl, p := s.parseTemplate(req.Run, tenant)
	problems = append(problems, p...)
	if len(problems) > 0 {
		return schedule.Schedule{}, invalidAll("invalid schedule", problems)
	}
	return schedule.Schedule{ID: id, Tenant: tenant, Spec: timer.Spec(), Run: tmpl, Next: timer.Next(s.cfg.Now())}, nil
}

// parseTemplate validates run, the body of POST /v1/runs a schedule's
// ticks create, as that route does; it may not name a run_id or start_at,
// which each tick sets.
func (s *Server) parseTemplate(run json.RawMessage, tenant string) (schedule.Template, []string) {
	if isNull(run) {
		return schedule.Template{}, []string{`run is missing: give the body of POST /v1/runs each tick creates`}
	}
	nr, problems := s.parseCreate(run, false)
	for i, p := range problems {
		problems[i] = "run: " + p
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(run, &fields) == nil {
		for _, k := range []string{"run_id", "start_at"} {
			if _, ok := fields[k]; ok {
				problems = append(problems, fmt.Sprintf("run: %s is not allowed: each tick sets its run's", k))
			}
		}
	}
	if len(problems) > 0 {
		return schedule.Template{}, problems
	}
	nr = nr.ownedBy(tenant)
	return schedule.Template{Agent: nr.run.Agent, Input: nr.input, Model: nr.run.Model, Metadata: nr.run.Metadata, RequestHash: nr.run.RequestHash}, nil
}

// ownedSchedule reads schedule id and checks that r's principal may see
// it; otherwise it answers 404 (or what the store's error calls for).
func (s *Server) ownedSchedule(w http.ResponseWriter, r *http.Request, id string) (schedule.Schedule, bool) {
	sc, err := s.cfg.Store.GetSchedule(r.Context(), id)
	if err == nil && !principalOf(r).owns(sc.Tenant) {
		err = fmt.Errorf("%w: schedule %s", store.ErrNotFound, id)
	}
	if err != nil {
		s.fail(w, r, "schedule "+id, err)
		return schedule.Schedule{}, false
	}
	return sc, true
}

// listSchedules serves GET /v1/schedules: the key's tenant's schedules
// (every one for an admin), by id.
func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) {
	all, err := s.cfg.Store.ListSchedules(r.Context())
	if err != nil {
		s.fail(w, r, "list schedules", err)
		return
	}
	out := ScheduleList{Schedules: []ScheduleView{}}
	tenant := tenantFilter(r)
	for _, sc := range all {
		if tenant == "" || sc.Tenant == tenant {
			out.Schedules = append(out.Schedules, scheduleViewOf(sc))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// getSchedule serves GET /v1/schedules/{id}.
func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) {
	if sc, ok := s.ownedSchedule(w, r, r.PathValue("id")); ok {
		writeJSON(w, http.StatusOK, scheduleViewOf(sc))
	}
}

// deleteSchedule serves DELETE /v1/schedules/{id}: 204; the runs it
// started stay.
func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := s.ownedSchedule(w, r, id); !ok {
		return
	}
	if err := s.cfg.Store.DeleteSchedule(r.Context(), id); err != nil {
		s.fail(w, r, "delete schedule "+id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// pauseSchedule serves POST /v1/schedules/{id}/pause: no tick fires while
// it is paused, and those that come due meanwhile are not caught up.
func (s *Server) pauseSchedule(w http.ResponseWriter, r *http.Request) {
	s.setPaused(w, r, true)
}

// resumeSchedule serves POST /v1/schedules/{id}/resume: ticks fire again
// from the first one after now.
func (s *Server) resumeSchedule(w http.ResponseWriter, r *http.Request) {
	s.setPaused(w, r, false)
}

// setPaused pauses or resumes a schedule: a compare-and-set of its record,
// read again when another write came first.
func (s *Server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) {
	id := r.PathValue("id")
	for range 4 {
		sc, ok := s.ownedSchedule(w, r, id)
		if !ok {
			return
		}
		if sc.Paused == paused {
			writeJSON(w, http.StatusOK, scheduleViewOf(sc))
			return
		}
		now := s.cfg.Now()
		sc.Paused, sc.UpdatedAt = paused, now
		if !paused {
			timer, err := schedule.NewTimer(sc.Spec)
			if err != nil {
				s.fail(w, r, "schedule "+id, err)
				return
			}
			sc.Next = timer.Next(now)
		}
		// A tick that waits for its last run is looked at at once (poll 0):
		// the sweepers' look sets its next poll.
		got, written, err := s.cfg.Store.PutSchedule(r.Context(), sc, sc.LookAt(now, 0))
		if err != nil {
			s.fail(w, r, "schedule "+id, err)
			return
		}
		if written {
			writeJSON(w, http.StatusOK, scheduleViewOf(got))
			return
		}
	}
	writeError(w, apiErr(http.StatusServiceUnavailable, CodeUnavailable, "schedule "+id+" kept changing; try again"))
}

// triggerSchedule serves POST /v1/schedules/{id}/trigger: 202 with the run
// it starts now, whatever its timer and overlap policy say (the run the
// body's run_id names, when it has one: 409 when a run of that id that
// the schedule did not start exists). The run is
// due for the sweepers at once, which request its first step.
func (s *Server) triggerSchedule(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := s.ownedSchedule(w, r, id); !ok {
		return
	}
	var req TriggerRequest
	if !s.optionalBody(w, r, &req, "trigger") {
		return
	}
	if req.RunID != "" {
		if p := idProblem("run_id", req.RunID, MaxRunIDLength); p != "" {
			writeError(w, invalid("invalid trigger: %s", p))
			return
		}
	}
	runID, err := s.schedules.Trigger(r.Context(), id, req.RunID)
	if err != nil {
		s.fail(w, r, "trigger schedule "+id, err)
		return
	}
	writeJSON(w, http.StatusAccepted, TriggerResponse{ScheduleID: id, RunID: runID})
}
