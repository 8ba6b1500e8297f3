package chaos

import (
	"encoding/json"
	"strings"
	"testing"
)

// composedVariant(4) holds: variant 4 composes, variant 3 does not.
const composedV, plainV = 4, 3

// forked is what the gateway answers for the fork from step first-1 of a
// run that history built: it ran, and lists the calls and logs the events
// of, the steps from first on, and holds the whole conversation.
func forked(v runView, evs []event, first int) (runView, []event) {
	var calls []callView
	for _, c := range v.ToolCalls {
		if c.Step >= first {
			calls = append(calls, c)
		}
	}
	var kids []childView
	for _, k := range v.Children {
		for _, c := range calls {
			if c.CallID == k.CallID {
				kids = append(kids, k)
			}
		}
	}
	v.ToolCalls, v.Children = calls, kids
	var kept []event
	for _, ev := range evs {
		if ev.Step >= first || ev.Type == evRunCreated || ev.Type == evRunStarted {
			kept = append(kept, ev)
		}
	}
	return v, kept
}

func TestNewScript_composes_only_the_variants_composedVariant_names(t *testing.T) {
	plain, _ := json.Marshal(newScript(1, plainV, 3, "r", 0, false))
	if got, _ := json.Marshal(newScript(1, plainV, 3, "r", 0, true)); string(got) != string(plain) {
		t.Fatalf("variant %d composed: %s, want %s", plainV, got, plain)
	}
	s := newScript(1, composedV, 3, "r", 0, true)
	if n := s.countFrom(0, childTool) - s.countFrom(1, childTool); n < 1 || n > 3 {
		t.Fatalf("step 0 calls %s %d times, want 1 to 3: %+v", childTool, n, s.Turns[0])
	}
	if s.countFrom(1, handoffTool) != 1 || s.countFrom(2, handoffTool) != 0 {
		t.Fatalf("want one handoff, at step 1: %+v", s.Turns)
	}
	if s.countFrom(2, childTool) != 1 || s.countFrom(2, heldTool) != 1 || len(s.Turns[3].ToolCalls) != 0 {
		t.Fatalf("want one more child and the new holder's own tool at step 2, and a final answer: %+v", s.Turns)
	}
}

func TestCheckReference_a_composed_run_logs_its_handoff_once_and_its_waits_as_no_commits(t *testing.T) {
	ref := newReference(t, composedV, true)
	run := "chaos-abc-0004"
	v, m, e := history(t, run, newScript(1, composedV, 3, run, 0, true))
	e = append(e, event{Type: evRunFinished, Step: 0, Data: json.RawMessage(`{"reason":"suspended"}`)})
	if vd := judge(ref, v, m, e, true, run); len(vd.wrong) > 0 || len(vd.doubles) > 0 {
		t.Fatalf("one more wait: %+v, want right", vd)
	}
	e = append(e, event{Type: evHandoff, Step: 1, CallID: "call_1_9"})
	if vd := judge(ref, v, m, e, true, run); len(vd.doubles) != 1 || vd.doubles[0] != "2 × run.handoff" {
		t.Fatalf("a second handoff: %+v, want it a double commit", vd)
	}
}

func TestCheckReference_a_fork_runs_and_logs_only_the_steps_after_its_fork_point(t *testing.T) {
	id := "chaos-abc-ref09"
	s := newScript(1, 9, 3, id, 0, true)
	view, msgs, evs := history(t, id, s)
	fv, fevs := forked(view, evs, 2)
	fv.RunID = id + forkSuffix
	ref := &reference{variant: 9, runID: fv.RunID, root: id, script: s, first: 2, commits: commitCounts(fevs)}
	var err error
	if ref.hist, err = normalize(fv, msgs, id); err != nil {
		t.Fatal(err)
	}
	if err := checkReference(ref, fv, fevs); err != nil {
		t.Fatal(err)
	}
	ref.first = 0
	if err := checkReference(ref, fv, fevs); err == nil {
		t.Fatal("a fork taken for a run from step 0: no problem found")
	}
}

func TestMember_the_reference_of_a_child_or_fork_is_the_same_member_of_the_reference_family(t *testing.T) {
	for _, c := range []struct{ id, root, want string }{
		{"chaos-abc-07", "chaos-abc-07", "chaos-abc-ref07"},
		{"chaos-abc-07.call_0_3", "chaos-abc-07", "chaos-abc-ref07.call_0_3"},
		{"chaos-abc-07.fork", "chaos-abc-07", "chaos-abc-ref07.fork"},
		{"chaos-abc-07.fork.call_2_3", "chaos-abc-07", "chaos-abc-ref07.fork.call_2_3"},
		{"chaos-abc-every1s-1795867290", "chaos-abc-every1s-1795867290", "chaos-abc-reftick"},
	} {
		refRoot := "chaos-abc-ref07"
		if strings.Contains(c.id, "every") {
			refRoot = "chaos-abc-reftick"
		}
		if got := (member{id: c.id, root: c.root, refRoot: refRoot}).refID(); got != c.want {
			t.Errorf("refID of %s = %s, want %s", c.id, got, c.want)
		}
	}
}

func TestChildProblems_each_agent_tool_call_has_one_child_whose_answer_is_its_result(t *testing.T) {
	id := "chaos-abc-0004"
	right, _, _ := history(t, id, newScript(1, composedV, 3, id, 0, true))
	answers := map[string]string{}
	for _, c := range right.Children {
		answers[c.RunID] = "The summary."
	}
	first := right.Children[0]
	cases := map[string]struct {
		change  func(v *runView, answers map[string]string)
		wrong   string // in the first problem; "" for none
		doubles int
	}{
		"as the reference": {change: func(*runView, map[string]string) {}},
		"no child listed": {
			change: func(v *runView, _ map[string]string) { v.Children = v.Children[1:] },
			wrong:  "child of " + first.CallID + ": none listed",
		},
		"two children for one call": {
			change: func(v *runView, _ map[string]string) {
				v.Children = append(v.Children, childView{RunID: id + ".other", CallID: first.CallID})
			},
			wrong: "child of " + first.CallID + ": 2 listed", doubles: 1,
		},
		"a child answered something else": {
			change: func(_ *runView, a map[string]string) { a[first.RunID] = "Another summary." },
			wrong:  "the call's result \"The summary.\", the child answered \"Another summary.\"",
		},
		"a child not ended": {
			change: func(_ *runView, a map[string]string) { delete(a, first.RunID) },
			wrong:  "did not end",
		},
		"a child of a call that is no agent tool's": {
			change: func(v *runView, _ map[string]string) {
				v.Children = append(v.Children, childView{RunID: id + ".call_0_0", CallID: "call_0_0"})
			},
			wrong: "child of call_0_0: listed, but that call is not an agent tool's",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			v := right
			v.Children = append([]childView(nil), right.Children...)
			a := map[string]string{}
			for k, x := range answers {
				a[k] = x
			}
			c.change(&v, a)
			wrong, doubles := childProblems(v, a)
			if doubles != c.doubles {
				t.Errorf("%d calls started two children, want %d", doubles, c.doubles)
			}
			switch {
			case c.wrong == "" && len(wrong) > 0:
				t.Errorf("wrong %q, want right", wrong)
			case c.wrong != "" && (len(wrong) == 0 || !strings.Contains(wrong[0], c.wrong)):
				t.Errorf("wrong %q, want %q", wrong, c.wrong)
			}
		})
	}
}

func TestForkProblem_a_fork_keeps_its_originals_history_up_to_the_fork_point(t *testing.T) {
	orig := "chaos-abc-0009"
	s := newScript(1, 9, 3, orig, 0, true)
	view, msgs, _ := history(t, orig, s)
	o, err := normalize(view, msgs, orig)
	if err != nil {
		t.Fatal(err)
	}
	n := forkPrefix(s, 1)
	if want := 1 + 1 + len(s.Turns[0].ToolCalls) + 1 + len(s.Turns[1].ToolCalls); n != want {
		t.Fatalf("forkPrefix from step 1 = %d, want %d", n, want)
	}
	edit := func(i int) normalized {
		f := o
		f.messages = append([][]byte(nil), o.messages...)
		f.messages[i] = []byte(`{"content":"edited","role":"user"}`)
		return f
	}
	if p := forkProblem(o, o, n); p != "" {
		t.Fatalf("the same history: %s", p)
	}
	if p := forkProblem(edit(n-1), o, n); !strings.HasPrefix(p, "fork: forked message "+itoa(n-1)) {
		t.Fatalf("a copied message edited: %q, want it named", p)
	}
	if p := forkProblem(edit(n), o, n); p != "" {
		t.Fatalf("a message after the fork point differs: %q, want it left to the reference's judgement", p)
	}
	short := o
	short.messages = o.messages[:n-1]
	if p := forkProblem(short, o, n); p == "" {
		t.Fatal("a fork shorter than its fork point: no problem found")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
