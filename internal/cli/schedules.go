package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
	"time"
)

// scheduleSummary is a schedule as GET /v1/schedules lists it.
type scheduleSummary struct {
	ScheduleID string    `json:"schedule_id"`
	Cron       string    `json:"cron"`
	Every      string    `json:"every"`
	Timezone   string    `json:"timezone"`
	Overlap    string    `json:"overlap"`
	Paused     bool      `json:"paused"`
	NextTick   time.Time `json:"next_tick"`
	LastRunID  string    `json:"last_run_id"`
	Run        struct {
		Agent string `json:"agent"`
	} `json:"run"`
}

// when is how often the schedule ticks, as it was given.
func (s scheduleSummary) when() string {
	if s.Every != "" {
		return "every " + s.Every
	}
	if s.Timezone != "" {
		return s.Cron + " (" + s.Timezone + ")"
	}
	return s.Cron
}

func schedules(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const want = "list, get, create, pause, resume, trigger or delete"
	if len(args) == 0 {
		return fmt.Errorf("%w: want %s", errUsage, want)
	}
	sub := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"list": schedulesList, "get": schedulesGet, "create": schedulesCreate, "delete": schedulesDelete,
		"pause": scheduleAction("pause"), "resume": scheduleAction("resume"), "trigger": scheduleAction("trigger"),
	}[args[0]]
	if sub == nil {
		return fmt.Errorf("%w: unknown %q, want %s", errUsage, args[0], want)
	}
	return sub(ctx, args[1:], stdout, stderr)
}

func schedulesList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("schedules list", stderr)
	if _, err := parse(fs, args, 0, "no arguments"); err != nil {
		return err
	}
	var list struct {
		Schedules []scheduleSummary `json:"schedules"`
	}
	if err := newClient(*gw).json(ctx, "GET", "/v1/schedules", nil, &list); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULE\tWHEN\tOVERLAP\tAGENT\tNEXT\tLAST RUN")
	for _, s := range list.Schedules {
		next := "paused"
		if !s.Paused {
			next = s.NextTick.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ScheduleID, s.when(), s.Overlap, s.Run.Agent, next, cmp.Or(s.LastRunID, "-"))
	}
	return tw.Flush()
}

func schedulesGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return getOne(ctx, "schedules get", "SCHEDULE", "/v1/schedules/", args, stdout, stderr)
}

// schedulesCreate posts a schedule: its timer from the flags, its run
// from --agent and --input (text), or the whole POST /v1/runs body in
// --run.
func schedulesCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("schedules create", stderr)
	id := fs.String("id", "", "the schedule's `id` (default: the gateway picks one)")
	cronExpr := fs.String("cron", "", "a crontab `expression`: minute hour day-of-month month day-of-week")
	every := fs.String("every", "", "an `interval` instead of --cron, e.g. 30s, 5m, 1h")
	tz := fs.String("timezone", "", "the IANA time `zone` --cron is read in (default UTC)")
	overlap := fs.String("overlap", "", "skip (default), buffer_one or allow_all: a tick while the last run is busy")
	catchup := fs.String("catchup-window", "", "how late a missed tick may still fire (default a year)")
	agent := fs.String("agent", "", "the `agent` of each run")
	input := fs.String("input", "", "the user `text` each run starts from")
	run := fs.String("run", "", "each run's POST /v1/runs `body` (JSON), instead of --agent and --input")
	if _, err := parse(fs, args, 0, "no arguments"); err != nil {
		return err
	}
	body := map[string]any{}
	for k, v := range map[string]string{"schedule_id": *id, "cron": *cronExpr, "every": *every, "timezone": *tz, "overlap": *overlap, "catchup_window": *catchup} {
		if v != "" {
			body[k] = v
		}
	}
	switch {
	case *run != "" && (*agent != "" || *input != ""):
		return fmt.Errorf("%w: give --run or --agent and --input, not both", errUsage)
	case *run != "":
		if !json.Valid([]byte(*run)) {
			return fmt.Errorf("%w: --run is not JSON", errUsage)
		}
		body["run"] = json.RawMessage(*run)
	default:
		body["run"] = map[string]string{"agent": *agent, "input": *input}
	}
	var out scheduleSummary
	if err := newClient(*gw).json(ctx, "POST", "/v1/schedules", body, &out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "schedule %s: %s, next tick %s\n", out.ScheduleID, out.when(), out.NextTick.Format(time.RFC3339))
	return nil
}

// scheduleAction is the command that posts POST /v1/schedules/{id}/verb.
func scheduleAction(verb string) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		fs, gw := flags("schedules "+verb, stderr)
		var runID *string
		if verb == "trigger" {
			runID = fs.String("run-id", "", "the `id` of the run it starts: the same trigger again starts no other (default: the gateway picks one)")
		}
		pos, err := parse(fs, args, 1, "SCHEDULE")
		if err != nil {
			return err
		}
		var body any
		if runID != nil && *runID != "" {
			body = map[string]string{"run_id": *runID}
		}
		var out struct {
			scheduleSummary
			RunID string `json:"run_id"`
		}
		if err := newClient(*gw).json(ctx, "POST", "/v1/schedules/"+url.PathEscape(pos[0])+"/"+verb, body, &out); err != nil {
			return err
		}
		switch {
		case verb == "trigger":
			fmt.Fprintf(stdout, "schedule %s started run %s\n", pos[0], out.RunID)
		case out.Paused:
			fmt.Fprintf(stdout, "schedule %s is paused\n", pos[0])
		default:
			fmt.Fprintf(stdout, "schedule %s is running, next tick %s\n", pos[0], out.NextTick.Format(time.RFC3339))
		}
		return nil
	}
}

func schedulesDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, gw := flags("schedules delete", stderr)
	pos, err := parse(fs, args, 1, "SCHEDULE")
	if err != nil {
		return err
	}
	if err := newClient(*gw).json(ctx, "DELETE", "/v1/schedules/"+url.PathEscape(pos[0]), nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "schedule %s deleted (its runs stay)\n", pos[0])
	return nil
}
