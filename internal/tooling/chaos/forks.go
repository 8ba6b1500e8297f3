package chaos

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// forkRuns forks each run of ids whose variant forkStep names (a batch
// run has none), from that
// step, as soon as the run is done (<run>.fork, POST /v1/runs/{id}/fork),
// while the churn goes on, and returns the forks it made (refRoots[v] is
// the reference run of variant v). It looks at the
// runs not yet forked every pollEvery until all are forked or deadline
// passes: a run not done by then is not forked (it is stuck on its own
// count), a fork the gateway refuses until then is among the problems.
func forkRuns(ctx context.Context, gw *gateway, cfg *Config, ids, refRoots []string, deadline time.Time) (forks []member, problems []string) {
	var open []int
	for i := range ids {
		if _, ok := forkStep(i%cfg.Variants, cfg.Steps); ok && !batchRun(i, cfg.BatchShare) {
			open = append(open, i)
		}
	}
	refused := map[int]error{}
	for len(open) > 0 && ctx.Err() == nil && time.Now().Before(deadline) {
		var mu sync.Mutex
		var still []int
		parallel(ctx, open, func(i int) {
			step, _ := forkStep(i%cfg.Variants, cfg.Steps)
			v, err := gw.run(ctx, ids[i])
			if err == nil && v.Status == "done" {
				err = gw.fork(ctx, ids[i], step, ids[i]+forkSuffix)
				if err == nil {
					mu.Lock()
					forks = append(forks, member{id: ids[i] + forkSuffix, root: ids[i], refRoot: refRoots[i%cfg.Variants], kind: memberFork})
					delete(refused, i)
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if v.Status == "done" {
				refused[i] = err
			}
			still = append(still, i)
		})
		open = still
		sleep(ctx, pollEvery)
	}
	for i, err := range refused {
		problems = append(problems, fmt.Sprintf("the fork of %s was refused until the settle limit: %v", ids[i], err))
	}
	sort.Strings(problems)
	sort.Slice(forks, func(a, b int) bool { return forks[a].id < forks[b].id })
	return forks, problems
}
