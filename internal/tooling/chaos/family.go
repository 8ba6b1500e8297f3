package chaos

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// judgeFamilies judges members, then, wave after wave, the children their
// views list (each waited for up to deadline like any run, its ending
// added to doneAt and took), and then what only a family shows: each
// parent's agent-tool calls against its children (childProblems) and each
// fork's copied history against its original's (forkProblem).
func judgeFamilies(ctx context.Context, st *stack, rdb *redis.Client, refs *references, members []member, doneAt map[string]time.Time, took *[]time.Duration, deadline time.Time, stops []stopWindow, logf func(string, ...any)) ([]*judgement, error) {
	var all []*judgement
	for wave := members; len(wave) > 0; {
		js, err := judgeAll(ctx, st, rdb, refs, wave, doneAt, stops)
		if err != nil {
			return nil, err
		}
		all = append(all, js...)
		wave = nil
		for _, j := range js {
			for _, c := range j.view.Children {
				wave = append(wave, j.child(c.RunID))
			}
		}
		if len(wave) == 0 {
			break
		}
		logf("judging %d child runs", len(wave))
		settleMembers(ctx, st.gw, wave, deadline, doneAt, took, logf)
	}
	checkFamilies(all)
	return all, nil
}

// settleMembers settles the runs ms (see settle), and adds to doneAt when
// each done one ended and to took how long it took.
func settleMembers(ctx context.Context, gw *gateway, ms []member, deadline time.Time, doneAt map[string]time.Time, took *[]time.Duration, logf func(string, ...any)) {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.id
	}
	d, t := settle(ctx, gw, ids, deadline, logf)
	for id, at := range d {
		doneAt[id] = at
	}
	*took = append(*took, t...)
}

// checkFamilies adds to the verdicts of js what only a family shows: a
// done parent's agent-tool calls each have one child, whose answer is the
// call's result; a done fork's history up to its fork point is its
// original's.
func checkFamilies(js []*judgement) {
	byID := map[string]*judgement{}
	answers := map[string]string{}
	for _, j := range js {
		byID[j.id] = j
		if a, ok := lastAnswer(j.verdict.hist); ok && j.kind == memberChild && j.verdict.done {
			answers[j.id] = a
		}
	}
	for _, j := range js {
		if !j.verdict.done || j.ref == nil {
			continue
		}
		wrong, doubles := childProblems(j.view, answers)
		j.verdict.wrong = append(j.verdict.wrong, wrong...)
		j.doubleStarted += doubles
		if j.kind != memberFork {
			continue
		}
		orig := byID[j.root]
		if orig == nil || !orig.verdict.done {
			continue // judged on its own count
		}
		if p := forkProblem(j.verdict.hist, orig.verdict.hist, forkPrefix(j.ref.script, j.ref.first-1)); p != "" {
			j.verdict.wrong = append(j.verdict.wrong, p)
		}
	}
}
