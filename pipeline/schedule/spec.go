package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // time zones on hosts without a zoneinfo database

	cron "github.com/netresearch/go-cron"
)

// Overlap is what a tick does while the schedule's previous run is not
// done.
type Overlap string

// The overlap policies.
const (
	// OverlapSkip drops the tick.
	OverlapSkip Overlap = "skip"
	// OverlapBufferOne keeps one tick, started when the previous run
	// ends; later ones are dropped while one waits.
	OverlapBufferOne Overlap = "buffer_one"
	// OverlapAllowAll starts the tick's run anyway.
	OverlapAllowAll Overlap = "allow_all"
)

// Defaults and bounds of a Spec.
const (
	// DefaultCatchupWindow is how far back missed ticks still fire when
	// a Spec names no window: a year, as Temporal's schedules default to.
	DefaultCatchupWindow = 365 * 24 * time.Hour
	// MinEvery is the shortest interval.
	MinEvery = time.Second
	// MaxCatchup bounds the missed ticks one look starts under
	// allow_all: the latest MaxCatchup, the older ones dropped.
	MaxCatchup = 100
)

// Spec is when a schedule ticks and what it does with overlapping and
// missed ticks. Exactly one of Cron (five fields, minute first, as crontab
// reads them, or a descriptor such as @hourly) and Every is set. Timezone
// (an IANA name, default UTC) is where Cron is read; Every ticks at the
// multiples of itself since the Unix epoch, whatever the zone. Overlap
// defaults to skip, CatchupWindow to DefaultCatchupWindow.
type Spec struct {
	Cron          string        `json:"cron,omitempty"`
	Every         time.Duration `json:"every,omitempty"`
	Timezone      string        `json:"timezone,omitempty"`
	Overlap       Overlap       `json:"overlap"`
	CatchupWindow time.Duration `json:"catchup_window"`
}

// cronParser reads crontab's five fields; a day of month and a day of week
// both restricted match either (crontab's rule, go-cron's DowOrDom).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor | cron.DowOrDom)

// Timer is a valid Spec, compiled: it tells a schedule's ticks.
type Timer struct {
	spec Spec
	cron cron.Schedule
	loc  *time.Location
}

// NewTimer checks spec and compiles it, its defaults set. Every problem is
// reported at once.
func NewTimer(spec Spec) (*Timer, error) {
	t := &Timer{spec: spec, loc: time.UTC}
	if t.spec.Overlap == "" {
		t.spec.Overlap = OverlapSkip
	}
	if t.spec.CatchupWindow == 0 {
		t.spec.CatchupWindow = DefaultCatchupWindow
	}
	var errs []error
	switch {
	case spec.Cron == "" && spec.Every == 0:
		errs = append(errs, errors.New(`give "cron" or "every"`))
	case spec.Cron != "" && spec.Every != 0:
		errs = append(errs, errors.New(`give "cron" or "every", not both`))
	case spec.Every != 0 && (spec.Every < MinEvery || spec.Every%time.Millisecond != 0):
		errs = append(errs, fmt.Errorf("every %s: want at least %s, in whole milliseconds", spec.Every, MinEvery))
	case strings.HasPrefix(spec.Cron, "@every"):
		errs = append(errs, fmt.Errorf(`cron %q: give an interval as "every"`, spec.Cron))
	case strings.Contains(spec.Cron, "TZ="):
		errs = append(errs, fmt.Errorf(`cron %q: give the time zone as "timezone"`, spec.Cron))
	case spec.Cron != "":
		c, err := cronParser.Parse(spec.Cron)
		if err != nil {
			errs = append(errs, fmt.Errorf("cron %q: %v", spec.Cron, err))
		}
		t.cron = c
	}
	if spec.Timezone != "" {
		loc, err := time.LoadLocation(spec.Timezone)
		if err != nil {
			errs = append(errs, fmt.Errorf("timezone %q is not an IANA time zone (e.g. Europe/Paris)", spec.Timezone))
		}
		t.loc = loc
	}
	switch t.spec.Overlap {
	case OverlapSkip, OverlapBufferOne, OverlapAllowAll:
	default:
		errs = append(errs, fmt.Errorf("overlap %q is not one of skip, buffer_one, allow_all", spec.Overlap))
	}
	if spec.CatchupWindow < 0 {
		errs = append(errs, fmt.Errorf("catchup_window %s is negative", spec.CatchupWindow))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// Spec is the timer's spec, its defaults set.
func (t *Timer) Spec() Spec { return t.spec }

// Next is the first tick strictly after after; the zero time when a cron
// expression matches no time within five years of it (30 February).
func (t *Timer) Next(after time.Time) time.Time {
	if t.spec.Every > 0 {
		ms, every := after.UnixMilli(), t.spec.Every.Milliseconds()
		return time.UnixMilli((ms/every + 1) * every).UTC()
	}
	return t.cron.Next(after.In(t.loc)).UTC()
}
