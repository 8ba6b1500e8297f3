package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// runPlaceholder stands for a run's own id in normalized histories, so that
// runs of one script compare equal while a value that strays from another
// run does not.
const runPlaceholder = "<RUN>"

// Event types the oracle counts. A commit event reports a transition that
// must happen once: its count per run, step or call is exactly one in an
// undisturbed run and must stay one under any fault. Claims (step.started,
// tool_call.started and their retried forms) may repeat: a claim whose
// worker died is claimed again.
const (
	evRunCreated   = "run.created"
	evRunStarted   = "run.started"
	evRunFinished  = "run.finished"
	evStepStarted  = "step.started"
	evStepRetried  = "step.retried"
	evStepEnded    = "step.ended"
	evAssistant    = "message.assistant"
	evCallCreated  = "tool_call.created"
	evCallStarted  = "tool_call.started"
	evCallRetried  = "tool_call.retried"
	evCallFinished = "tool_call.finished"
	evHandoff      = "run.handoff"
)

// commitScope says what a commit event type is counted per.
var commitScope = map[string]string{
	evRunCreated:   "run",
	evRunStarted:   "run",
	evRunFinished:  "run",
	evHandoff:      "run", // the scripts hand a run over once at most
	evAssistant:    "step",
	evStepEnded:    "step",
	evCallCreated:  "call",
	evCallFinished: "call",
}

// commitKey names the commit ev reports ("tool_call.finished call_1_0"),
// and false for an event that is not a commit. A run.finished with reason
// suspended is not one: a run whose calls wait (for its children) logs
// one each time it is set waiting, as many times as its waits happen to
// be apart.
func commitKey(ev event) (string, bool) {
	if ev.Type == evRunFinished && suspension(ev) {
		return "", false
	}
	switch commitScope[ev.Type] {
	case "run":
		return ev.Type, true
	case "step":
		return fmt.Sprintf("%s step %d", ev.Type, ev.Step), true
	case "call":
		return fmt.Sprintf("%s %s", ev.Type, ev.CallID), true
	}
	return "", false
}

// suspension reports whether ev's data names the reason suspended.
func suspension(ev event) bool {
	var d struct {
		Reason string `json:"reason"`
	}
	return json.Unmarshal(ev.Data, &d) == nil && d.Reason == "suspended"
}

// commitCounts counts the commit events of a log by key.
func commitCounts(evs []event) map[string]int {
	out := map[string]int{}
	for _, ev := range evs {
		if k, ok := commitKey(ev); ok {
			out[k]++
		}
	}
	return out
}

// claimCounts returns how many steps were claimed more than once and how
// many calls were executed more than once: lost work done again, which is
// allowed (at-least-once execution) and reported for scale.
func claimCounts(evs []event) (retriedSteps, reexecutedCalls int) {
	steps, calls := map[int]int{}, map[string]int{}
	for _, ev := range evs {
		switch ev.Type {
		case evStepStarted, evStepRetried:
			steps[ev.Step]++
		case evCallStarted, evCallRetried:
			calls[ev.CallID]++
		}
	}
	for _, n := range steps {
		if n > 1 {
			retriedSteps++
		}
	}
	for _, n := range calls {
		if n > 1 {
			reexecutedCalls++
		}
	}
	return retriedSteps, reexecutedCalls
}

// outcome is what the oracle compares of GET /v1/runs/{id}: everything but
// timestamps.
type outcome struct {
	Status      string       `json:"status"`
	Step        int          `json:"step"`
	Termination *termination `json:"termination"`
	Usage       any          `json:"usage"`
	Calls       []callView   `json:"tool_calls"`
}

// normalized is one run's comparable history: its outcome and its
// messages, as canonical JSON with the id of its family's root (see
// member) replaced by runPlaceholder.
type normalized struct {
	outcome  []byte
	calls    [][]byte // each call, for pointing at the first difference
	messages [][]byte // each message
}

func normalize(v runView, messages json.RawMessage, root string) (normalized, error) {
	var n normalized
	o := outcome{Status: v.Status, Step: v.Step, Termination: v.Termination, Usage: v.Usage, Calls: v.ToolCalls}
	b, err := json.Marshal(o)
	if err != nil {
		return n, err
	}
	if n.outcome, err = canonicalFor(b, root); err != nil {
		return n, err
	}
	for _, c := range v.ToolCalls {
		b, err := json.Marshal(c)
		if err != nil {
			return n, err
		}
		cb, err := canonicalFor(b, root)
		if err != nil {
			return n, err
		}
		n.calls = append(n.calls, cb)
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(messages, &msgs); err != nil {
		return n, fmt.Errorf("messages of %s: %w", v.RunID, err)
	}
	for _, m := range msgs {
		cm, err := canonicalFor(m, root)
		if err != nil {
			return n, err
		}
		n.messages = append(n.messages, cm)
	}
	return n, nil
}

// canonicalFor returns b as canonical JSON with runID replaced.
func canonicalFor(b []byte, runID string) ([]byte, error) {
	c, err := canonicalJSON(b)
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(c, []byte(runID), []byte(runPlaceholder)), nil
}

// reference is one script variant as an undisturbed run ended it (or a
// child or the fork of such a run, or a run of the schedules' script).
type reference struct {
	variant int
	runID   string
	root    string // its family's root, which its history is normalized with
	script  scriptModel
	first   int // the first step it ran: a fork's is the step after its fork point
	hist    normalized
	commits map[string]int
}

// checkReference fails unless an undisturbed run ended the way its script
// says: done with natural_end at the last step, every call succeeded, every
// message there, every commit event logged once. A fork runs, and so
// logs, only the steps from r.first on, though its history holds them all.
func checkReference(r *reference, v runView, evs []event) error {
	var problems []string
	steps := len(r.script.Turns) - 1
	if v.Status != "done" || v.Termination == nil || v.Termination.Reason != "natural_end" || v.Step != steps {
		problems = append(problems, fmt.Sprintf("status %s, step %d, termination %s; want done, step %d, natural_end", v.Status, v.Step, v.Termination, steps))
	}
	if want := r.script.callsFrom(r.first); len(v.ToolCalls) != want {
		problems = append(problems, fmt.Sprintf("%d tool calls, want %d", len(v.ToolCalls), want))
	}
	for _, c := range v.ToolCalls {
		if c.Status != "succeeded" {
			problems = append(problems, fmt.Sprintf("call %s %s, want succeeded", c.CallID, c.Status))
		}
	}
	if want := 1 + len(r.script.Turns) + r.script.calls(); len(r.hist.messages) != want {
		problems = append(problems, fmt.Sprintf("%d messages, want %d", len(r.hist.messages), want))
	}
	for k, n := range r.commits {
		if n != 1 {
			problems = append(problems, fmt.Sprintf("%d × %s, want 1", n, k))
		}
	}
	ran := len(r.script.Turns) - r.first
	if want := 3 + 2*ran + 2*r.script.callsFrom(r.first) + r.script.countFrom(r.first, handoffTool); len(r.commits) != want {
		problems = append(problems, fmt.Sprintf("%d distinct commit events, want %d", len(r.commits), want))
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("the undisturbed reference run %s (variant %d) did not run as scripted: %s", r.runID, r.variant, strings.Join(problems, "; "))
	}
	return nil
}

// verdict is the oracle's judgement of one run.
type verdict struct {
	done    bool
	wrong   []string   // what differs from the reference; empty when right
	doubles []string   // commit events logged more than once
	hist    normalized // when done
}

// judge compares a run with the reference of its script. v, messages and
// evs are what the gateway answered for the run; complete is false when
// the event log could not be read to its end.
// Its history is normalized with root, the id of its family's root.
func judge(ref *reference, v runView, messages json.RawMessage, evs []event, complete bool, root string) verdict {
	vd := verdict{done: v.Status == "done"}
	counts := commitCounts(evs)
	for k, n := range counts {
		if n > 1 {
			vd.doubles = append(vd.doubles, fmt.Sprintf("%d × %s", n, k))
		}
	}
	sort.Strings(vd.doubles)
	if !vd.done {
		return vd // stuck; judged as such
	}
	hist, err := normalize(v, messages, root)
	if err != nil {
		vd.wrong = append(vd.wrong, "unreadable: "+err.Error())
		return vd
	}
	vd.hist = hist
	if !bytes.Equal(hist.outcome, ref.hist.outcome) {
		vd.wrong = append(vd.wrong, outcomeDiff(ref, v, hist))
	}
	if d := firstDiff("message", hist.messages, ref.hist.messages); d != "" {
		vd.wrong = append(vd.wrong, d)
	}
	if !complete {
		vd.wrong = append(vd.wrong, "event log: could not be read to its end")
	}
	var missing, extra []string
	for k := range ref.commits {
		if counts[k] == 0 {
			missing = append(missing, k)
		}
	}
	for k := range counts {
		if ref.commits[k] == 0 {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		vd.wrong = append(vd.wrong, "event log: missing "+strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		vd.wrong = append(vd.wrong, "event log: unexpected "+strings.Join(extra, ", "))
	}
	return vd
}

// outcomeDiff says how a run's outcome differs from the reference's.
func outcomeDiff(ref *reference, v runView, got normalized) string {
	var want outcome
	_ = json.Unmarshal(ref.hist.outcome, &want)
	if v.Termination.String() != want.Termination.String() || v.Step != want.Step {
		return fmt.Sprintf("termination: %s at step %d, want %s at step %d", v.Termination, v.Step, want.Termination, want.Step)
	}
	if d := firstDiff("tool call", got.calls, ref.hist.calls); d != "" {
		return d
	}
	return fmt.Sprintf("outcome: %s, want %s", clip(got.outcome, 300), clip(ref.hist.outcome, 300))
}

// firstDiff points at the first element of got that differs from want.
func firstDiff(what string, got, want [][]byte) string {
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			return fmt.Sprintf("%s %d: missing, want %s (%d in all, want %d)", what, i, clip(want[i], 200), len(got), len(want))
		case i >= len(want):
			return fmt.Sprintf("%s %d: unexpected %s (%d in all, want %d)", what, i, clip(got[i], 200), len(got), len(want))
		case !bytes.Equal(got[i], want[i]):
			return fmt.Sprintf("%s %d: %s, want %s", what, i, clip(got[i], 200), clip(want[i], 200))
		}
	}
	return ""
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// category shortens a reason for the histograms of the report: the reason
// up to its first colon, with a termination's reason kept.
func category(reason string) string {
	if rest, ok := strings.CutPrefix(reason, "termination: "); ok {
		head, _, _ := strings.Cut(rest, " at step")
		if r, _, ok := strings.Cut(head, ":"); ok {
			head = r
		}
		return "termination " + head
	}
	if rest, ok := strings.CutPrefix(reason, "event log: "); ok {
		kind, list, _ := strings.Cut(rest, " ")
		types := map[string]bool{}
		for _, item := range strings.Split(list, ", ") {
			t, _, _ := strings.Cut(item, " ")
			types[t] = true
		}
		var ts []string
		for t := range types {
			ts = append(ts, t)
		}
		sort.Strings(ts)
		return "event log " + kind + " " + strings.Join(ts, ",")
	}
	head, _, _ := strings.Cut(reason, ":")
	if f := strings.Fields(head); len(f) > 0 && (f[0] == "message" || f[0] == "tool") {
		return strings.TrimRight(strings.TrimRight(head, "0123456789"), " ") + " differs"
	}
	return head
}
