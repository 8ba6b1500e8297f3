package store_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

var evalUsec = regexp.MustCompile(`cmdstat_evalsha:calls=(\d+),usec=(\d+)`)

func evalsha(t *testing.T, rdb *redis.Client) int64 {
	s, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := evalUsec.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	u, _ := strconv.ParseInt(m[2], 10, 64)
	return u
}

func TestPerOp(t *testing.T) {
	rdb := testinfra.RedisServerClient(t)
	ctx := context.Background()
	st := store.New(rdb)
	now := time.Now()
	run := newRun("bench")
	if _, _, err := st.CreateRun(ctx, run, input, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimStep(ctx, run.ID, 0, lease("w", now.Add(time.Hour)), now); err != nil {
		t.Fatal(err)
	}
	spent := map[string]int64{}
	op := func(name string, f func() error) {
		u0 := evalsha(t, rdb)
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		spent[name] += evalsha(t, rdb) - u0
	}
	const n = 3000
	for step := range n {
		callID := "c" + strconv.Itoa(step)
		op("commit", func() error { _, _, err := st.CommitStep(ctx, run.ID, step, "w", commitOf(callID), now); return err })
		op("claimcall", func() error {
			_, err := st.ClaimCall(ctx, run.ID, callID, lease("t", now.Add(time.Hour)), now)
			return err
		})
		op("finish", func() error { _, err := st.FinishCall(ctx, run.ID, callID, "t", succeeded, now); return err })
		op("snapshot", func() error { _, err := st.Snapshot(ctx, run.ID, time.Minute, now); return err })
		tool := pipeline.Message{Role: pipeline.RoleTool, Content: `{"ok":true}`, ToolCallID: callID}
		end := store.StepEnd{ToolMessages: []pipeline.Message{tool}, CallIDs: []string{callID}}
		op("endclaim", func() error {
			_, _, err := st.EndStepAndClaim(ctx, run.ID, step, end, lease("w", now.Add(time.Hour)), now)
			return err
		})
	}
	for k, v := range spent {
		t.Logf("%-10s %6.2f us per call", k, float64(v)/n)
	}
}
