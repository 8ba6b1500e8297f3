package chaos

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Pauses the report lists: the runs whose pause is at least notablePause
// are counted by where it was; the longestPauses longest are samples.
const (
	notablePause  = time.Second
	longestPauses = 5
)

// stopWindow is when one worker was going away: from the signal the
// harness sent it (SIGTERM, or SIGKILL in the kill churn) to its exit.
// Work that worker held and gave up ended within the window.
type stopWindow struct {
	worker  string // its name, e.g. toolworker-2
	program string // programStepWorker or programToolWorker
	from    time.Time
	to      time.Time
}

// scriptedWork is how long a run's script says each of its pieces of work
// takes: each step's inference (the turn's delay_ms) and each tool call (a
// sleep call's ms; 0 for echo).
type scriptedWork struct {
	inference map[int]time.Duration    // by step
	calls     map[string]time.Duration // by call id
}

// workOf returns the scripted work of a run of script s, whose calls v
// lists (the call ids are the pipeline's; their tool and arguments are the
// script's).
func workOf(s scriptModel, v runView) scriptedWork {
	w := scriptedWork{inference: map[int]time.Duration{}, calls: map[string]time.Duration{}}
	for step, t := range s.Turns {
		w.inference[step] = time.Duration(t.DelayMS) * time.Millisecond
	}
	for _, c := range v.ToolCalls {
		if c.Tool != "sleep" {
			continue
		}
		var args struct {
			MS int `json:"ms"`
		}
		if json.Unmarshal(c.Arguments, &args) == nil {
			w.calls[c.CallID] = time.Duration(args.MS) * time.Millisecond
		}
	}
	return w
}

// pause is the longest wait of one run that its script does not explain.
type pause struct {
	length        time.Duration
	from, to      time.Time
	after, before event // the events around it
}

// where names the pause's place by the types of the events around it.
func (p pause) where() string {
	if p.after.Type == "" {
		return "none"
	}
	return p.after.Type + " → " + p.before.Type
}

// format says how long the pause was, when, in seconds from origin (the
// start of the churn), and between which events.
func (p pause) format(origin time.Time) string {
	return fmt.Sprintf("paused %.2fs from %+.2fs to %+.2fs, after %s, before %s",
		p.length.Seconds(), p.from.Sub(origin).Seconds(), p.to.Sub(origin).Seconds(), describe(p.after), describe(p.before))
}

// describe names an event with what it is about: "tool_call.finished
// call_1_0", "step.ended step 1", "run.created".
func describe(ev event) string {
	switch {
	case ev.CallID != "":
		return ev.Type + " " + ev.CallID
	case strings.HasPrefix(ev.Type, "step.") || ev.Type == evAssistant:
		return fmt.Sprintf("%s step %d", ev.Type, ev.Step)
	}
	return ev.Type
}

// longestPause returns the longest stretch, from run.created to
// run.finished, in which the run logged no event and none of its scripted
// work was still running: the run waited for nothing it had asked for.
//
// A claim (step.started or step.retried, tool_call.started or
// tool_call.retried) starts a piece of work that the script says takes L
// (the step's inference delay, the call's sleep); its completion event
// (message.assistant of the step, tool_call.finished of the call) ends it.
// Between two consecutive events, the time until the latest end among the
// claims still open is explained; the rest is pause. A claim's work is
// taken to run until claim + L: never less than it did, so scripted time is
// never counted as pause. A claim that was lost (claimed again later, after
// its worker gave it up) ran at most until its worker stopped: when stop
// windows of its program overlap the time between the claim and the next
// claim, its end is cut to the latest end of those windows (at most the
// next claim), which is still no earlier than the worker gave the work up.
// Without the cut, a sleep longer than the grace would explain, and so
// hide, the handover that followed its abandonment.
//
// The result is a lower bound of the time the run waited for the pipeline,
// and exact where no lost claim overlaps the pause. (It would count too
// much only if a claim were lost for another reason while a worker of its
// program was stopping: rare in the rolling restart, where claims are lost
// by stops; in the kill churn, with two workers of each program, the kill
// of the other worker cuts too, so there the figure is only indicative.)
// evs are the run's events in log order; events after run.finished are
// ignored.
//
// handovers are, for each lost claim cut by a stop window, the time from
// the exit of the stopped worker to the next claim: how soon the work was
// taken over (negative when the new claim came before the old process had
// exited).
func longestPause(evs []event, w scriptedWork, stops []stopWindow) (longest pause, handovers []time.Duration) {
	for i, ev := range evs {
		if ev.Type == evRunFinished {
			evs = evs[:i+1]
			break
		}
	}
	ends, handovers := claimEnds(evs, w, stops)
	open := map[string]time.Time{} // open claims' explained ends, by work key
	for i, ev := range evs {
		if i > 0 {
			prev := evs[i-1]
			explained := prev.At
			for _, end := range open {
				if end.After(explained) {
					explained = end
				}
			}
			if d := ev.At.Sub(explained); d > longest.length {
				longest = pause{length: d, from: explained, to: ev.At, after: prev, before: ev}
			}
		}
		key, claim, done := workKey(ev)
		switch {
		case claim:
			open[key] = ends[i]
		case done:
			delete(open, key)
		}
	}
	return longest, handovers
}

// claimEnds returns, by event index, when the work each claim of evs
// started ends at the latest, and the handovers of the lost claims (see
// longestPause).
func claimEnds(evs []event, w scriptedWork, stops []stopWindow) (ends map[int]time.Time, handovers []time.Duration) {
	ends = map[int]time.Time{}
	last := map[string]int{} // the latest claim of each key so far
	for i, ev := range evs {
		key, claim, _ := workKey(ev)
		if !claim {
			continue
		}
		l := w.calls[ev.CallID]
		program := programToolWorker
		if ev.CallID == "" {
			l, program = w.inference[ev.Step], programStepWorker
		}
		ends[i] = ev.At.Add(l)
		if j, ok := last[key]; ok {
			// Claim j was lost: its worker gave it up before claim i.
			var exit time.Time
			for _, s := range stops {
				if s.program == program && s.from.Before(ev.At) && s.to.After(evs[j].At) && s.to.After(exit) {
					exit = s.to
				}
			}
			if !exit.IsZero() {
				handovers = append(handovers, ev.At.Sub(exit))
				if cut := minTime(exit, ev.At); cut.Before(ends[j]) {
					ends[j] = cut
				}
			}
		}
		last[key] = i
	}
	return ends, handovers
}

// workKey names the piece of work ev claims or completes ("step 1",
// "call call_1_0").
func workKey(ev event) (key string, claim, done bool) {
	switch ev.Type {
	case evStepStarted, evStepRetried:
		return fmt.Sprintf("step %d", ev.Step), true, false
	case evAssistant:
		return fmt.Sprintf("step %d", ev.Step), false, true
	case evCallStarted, evCallRetried:
		return "call " + ev.CallID, true, false
	case evCallFinished:
		return "call " + ev.CallID, false, true
	}
	return "", false, false
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// tallyPauses fills the report's pause figures from the judgements of the
// runs done in time whose pause was measured (timed: the parents of child
// runs wait by design). With limit > 0 (rolling mode), a run that paused
// longer than limit counts in Paused, which fails the experiment. origin
// is the start of the churn; the samples name the restarts of rolling
// (nil outside rolling mode) that overlap each pause.
func tallyPauses(rep *Report, js []*judgement, limit time.Duration, origin time.Time, rolling *RollingFigures) {
	var done []*judgement
	for _, j := range js {
		if j.verdict.done && j.timed {
			done = append(done, j)
		}
	}
	if len(done) == 0 {
		return
	}
	rep.PauseWhere = map[string]int{}
	ds := make([]time.Duration, 0, len(done))
	var handovers []time.Duration
	for _, j := range done {
		ds = append(ds, j.pause.length)
		handovers = append(handovers, j.handovers...)
		if j.pause.length >= notablePause {
			rep.PauseWhere[j.pause.where()]++
		}
		if limit > 0 && j.pause.length > limit {
			rep.Paused++
			rep.addSample(Sample{RunID: j.id, Kind: "paused", Details: pauseDetails(j.pause, origin, rolling)})
		}
	}
	rep.PauseSeconds = durationFigures(ds)
	rep.Handovers, rep.HandoverSeconds = len(handovers), durationFigures(handovers)
	sort.SliceStable(done, func(a, b int) bool { return done[a].pause.length > done[b].pause.length })
	for _, j := range done[:min(longestPauses, len(done))] {
		rep.addSample(Sample{RunID: j.id, Kind: "longest_pause", Details: pauseDetails(j.pause, origin, rolling)})
	}
}

// pauseDetails describes p and the restarts of rolling whose time, from
// the SIGTERM to the replacement up and settled, overlaps it or ended at
// most a second before it.
func pauseDetails(p pause, origin time.Time, rolling *RollingFigures) []string {
	out := []string{p.format(origin)}
	if rolling == nil {
		return out
	}
	from, to := p.from.Sub(origin).Seconds()-1, p.to.Sub(origin).Seconds()
	for _, r := range rolling.Restarts {
		end := r.AtS + r.ExitS + max(0, r.UpS) + upSettle.Seconds()
		if r.AtS <= to && end >= from {
			out = append(out, "during the restart of "+r.String())
		}
	}
	return out
}
