package chaos

import (
	"strings"
	"testing"
	"time"
)

// at returns an event of type typ for step (and call, when not "") at ms
// milliseconds after t0.
func at(ms int, typ string, step int, call string) event {
	return event{Type: typ, Step: step, CallID: call, At: t0.Add(time.Duration(ms) * time.Millisecond)}
}

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// oneStep is the log of a run of one step of two parallel calls (call_0_0
// an echo, call_0_1 a sleep of 500 ms, inference 100 ms), each transition
// 10 ms after the work that leads to it.
func oneStep() []event {
	return []event{
		at(0, evRunCreated, 0, ""),
		at(10, evRunStarted, 0, ""),
		at(20, evStepStarted, 0, ""),
		at(130, evAssistant, 0, ""),
		at(130, evCallCreated, 0, "call_0_0"),
		at(130, evCallCreated, 0, "call_0_1"),
		at(140, evCallStarted, 0, "call_0_0"),
		at(145, evCallStarted, 0, "call_0_1"),
		at(150, evCallFinished, 0, "call_0_0"),
		at(655, evCallFinished, 0, "call_0_1"),
		at(665, evStepEnded, 0, ""),
		at(675, evRunFinished, 0, ""),
	}
}

var oneStepWork = scriptedWork{
	inference: map[int]time.Duration{0: 100 * time.Millisecond},
	calls:     map[string]time.Duration{"call_0_1": 500 * time.Millisecond},
}

func TestLongestPause_of_an_undisturbed_run_is_the_pipeline_latency_only(t *testing.T) {
	p, _ := longestPause(oneStep(), oneStepWork, nil)
	if p.length != 10*time.Millisecond {
		t.Fatalf("pause %s (%s), want 10ms: the inference and the sleep are scripted", p.length, p.format(t0))
	}
}

func TestLongestPause_counts_a_wait_with_no_work_running(t *testing.T) {
	evs := oneStep()
	// The step ends 3 s after its last call: nothing scripted explains it.
	evs[10].At = evs[9].At.Add(3 * time.Second)
	evs[11].At = evs[10].At.Add(10 * time.Millisecond)
	p, _ := longestPause(evs, oneStepWork, nil)
	if p.length != 3*time.Second || p.where() != evCallFinished+" → "+evStepEnded {
		t.Fatalf("got %s at %s, want 3s before step.ended", p.length, p.where())
	}
}

func TestLongestPause_does_not_count_a_sleep_still_running_beside_a_finished_call(t *testing.T) {
	// Between call_0_0 finished (150 ms) and call_0_1 finished (655 ms),
	// the sleep runs: no pause there.
	p, _ := longestPause(oneStep(), oneStepWork, nil)
	if p.after.Type == evCallFinished && p.before.Type == evCallFinished {
		t.Fatalf("counted the sleep as a pause: %s", p.format(t0))
	}
}

// handedOver is oneStep where the sleep (now 5 s) is claimed at 145 ms by
// a tool worker that gets SIGTERM at 645 ms, abandons the call at the end
// of a 3 s grace and exits at 3 700 ms; another worker claims it again at
// 3 900 ms and finishes it at 8 905 ms.
func handedOver() ([]event, scriptedWork, stopWindow) {
	evs := oneStep()[:9]
	evs = append(evs,
		at(3900, evCallRetried, 0, "call_0_1"),
		at(8905, evCallFinished, 0, "call_0_1"),
		at(8915, evStepEnded, 0, ""),
		at(8925, evRunFinished, 0, ""),
	)
	w := scriptedWork{inference: oneStepWork.inference, calls: map[string]time.Duration{"call_0_1": 5 * time.Second}}
	stop := stopWindow{worker: "toolworker-1", program: programToolWorker, from: t0.Add(645 * time.Millisecond), to: t0.Add(3700 * time.Millisecond)}
	return evs, w, stop
}

func TestLongestPause_of_a_handed_over_call_runs_from_its_worker_exit_to_the_next_claim(t *testing.T) {
	evs, w, stop := handedOver()
	p, handovers := longestPause(evs, w, []stopWindow{stop})
	if p.length != 200*time.Millisecond || p.before.Type != evCallRetried {
		t.Fatalf("got %s, want 200ms from the exit at 3.7s to the claim at 3.9s", p.format(t0))
	}
	if len(handovers) != 1 || handovers[0] != 200*time.Millisecond {
		t.Fatalf("handovers %v, want [200ms]", handovers)
	}
}

func TestLongestPause_lets_a_lost_claim_explain_its_whole_script_without_a_stop_window(t *testing.T) {
	evs, w, _ := handedOver()
	if p, _ := longestPause(evs, w, nil); p.length > 10*time.Millisecond {
		t.Fatalf("got %s, want the pipeline latency only: the lost sleep's 5 s cover the handover", p.format(t0))
	}
}

func TestLongestPause_ignores_the_stop_of_a_worker_of_the_other_program(t *testing.T) {
	evs, w, stop := handedOver()
	stop.program = programStepWorker
	if p, _ := longestPause(evs, w, []stopWindow{stop}); p.length > 10*time.Millisecond {
		t.Fatalf("a step worker's stop cut a tool call's work: %s", p.format(t0))
	}
}

func TestLongestPause_ignores_events_after_run_finished(t *testing.T) {
	evs := append(oneStep(), at(60_000, "decision.rejected", 0, "call_0_1"))
	if p, _ := longestPause(evs, oneStepWork, nil); p.length != 10*time.Millisecond {
		t.Fatalf("got %s, want 10ms", p.format(t0))
	}
}

func TestWorkOf_takes_sleeps_from_the_calls_and_inference_from_the_turns(t *testing.T) {
	s := scriptModel{Turns: []turn{{DelayMS: 120}, {DelayMS: 7}}}
	v := runView{ToolCalls: []callView{
		{CallID: "a", Tool: "sleep", Arguments: []byte(`{"ms":4000}`)},
		{CallID: "b", Tool: "echo", Arguments: []byte(`{"ms":9}`)},
	}}
	w := workOf(s, v)
	if w.calls["a"] != 4*time.Second || w.calls["b"] != 0 || w.inference[0] != 120*time.Millisecond || w.inference[1] != 7*time.Millisecond {
		t.Fatalf("got %+v", w)
	}
}

func TestParseTimings_reads_the_graces_and_the_sweep_interval(t *testing.T) {
	tim, err := parseTimings(RollingWorkerYAML)
	if err != nil {
		t.Fatal(err)
	}
	if tim.stepGrace != 3*time.Second || tim.toolGrace != 3*time.Second || tim.sweep != 200*time.Millisecond {
		t.Fatalf("got %+v", tim)
	}
	if got := tim.pauseLimit(); got != 5200*time.Millisecond {
		t.Fatalf("pause limit %s, want 5.2s", got)
	}
}

func TestParseTimings_falls_back_to_the_programs_defaults(t *testing.T) {
	tim, err := parseTimings(DefaultWorkerYAML)
	if err != nil {
		t.Fatal(err)
	}
	if tim.grace() != defaultShutdownGrace || tim.sweep != 200*time.Millisecond {
		t.Fatalf("got %+v", tim)
	}
	if _, err := parseTimings("toolworker: {shutdown_grace: soon}"); err == nil || !strings.Contains(err.Error(), "toolworker.shutdown_grace") {
		t.Fatalf("a bad duration was accepted: %v", err)
	}
}

func TestHandlersUp_waits_for_every_handler_the_router_runs(t *testing.T) {
	log := `level=INFO msg="Running router handlers" program=stepworker count=2
level=INFO msg="Starting handler" program=stepworker subscriber_name=step
`
	if handlersUp(log) {
		t.Fatal("up with one handler of two started")
	}
	if !handlersUp(log + `level=INFO msg="Starting handler" program=stepworker subscriber_name=decision` + "\n") {
		t.Fatal("not up with both handlers started")
	}
}

func TestNewScript_with_a_grace_holds_work_longer_than_it(t *testing.T) {
	grace := 3 * time.Second
	longer := 0
	for v := range 16 {
		s := newScript(1, v, 3, "r", grace, false)
		for _, tu := range s.Turns {
			if tu.DelayMS > int(grace.Milliseconds()) {
				longer++
			}
			for _, c := range tu.ToolCalls {
				if ms, ok := c.Arguments["ms"].(int); ok && ms > int(grace.Milliseconds()) {
					longer++
				}
			}
		}
	}
	if longer == 0 {
		t.Fatal("no work longer than the grace in 16 variants")
	}
}
