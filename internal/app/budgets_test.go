package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

const budgetConfig = `
kafka: {partitions: 4}
stepworker: {lease: 2s, sweep_interval: 100ms, dispatch_timeout: 3s, max_attempts: 3}
toolworker: {lease: 2s, default_timeout: 10s}
budgets:
  reserve_tokens: 120
  # 100 input tokens at 10 USD and 20 output at 50 USD a million: 0.002
  # USD a step; a reservation holds 120 tokens at 50 USD, 0.006 USD.
  prices: {synthetic: {input_per_mtok: 10, output_per_mtok: 50}}
agents:
  metered:
    model: {provider: synthetic, tool_calls_per_step: 1, tool: echo, steps: 3, input_tokens: 100, output_tokens: 20}
    tools: [echo, sleep]
`

type batchView struct {
	Total   int            `json:"total"`
	Counts  map[string]int `json:"counts"`
	Reasons map[string]int `json:"reasons"`
	Usage   pipeline.Usage `json:"usage"`
}

// sendBatch sends items as a batch (with query, budgets say) and waits up to
// timeout until every run is done; it returns the batch's id and view.
func sendBatch(t *testing.T, base string, items []map[string]any, query string, timeout time.Duration) (string, batchView) {
	t.Helper()
	var batch struct {
		BatchID string `json:"batch_id"`
	}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/batch"+query, items, &batch); code != http.StatusCreated {
		t.Fatalf("batch: %d", code)
	}
	var v batchView
	testinfra.Eventually(t, timeout, func() bool {
		httpDo(t, http.MethodGet, base+"/v1/batches/"+batch.BatchID, nil, &v)
		return v.Counts["done"] == len(items)
	}, func() string { return fmt.Sprintf("batch %+v", v) })
	return batch.BatchID, v
}

// A batch with a token budget: its runs (480 tokens each, 4,800 together)
// stop, stopped with code budget, once the batch's 1,500 tokens cannot
// cover another step's reservation (which runs got how far depends on how
// they interleaved); the batch's counts and usage add up, and its usage
// never passes the budget. A run's view names its batch.
func TestBudgets_a_batch_stops_its_runs_once_its_budget_is_spent(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, budgetConfig))
	workers(t, stack)
	base := serve(t, stack)
	items := make([]map[string]any, 10)
	for i := range items {
		items[i] = map[string]any{"run_id": fmt.Sprintf("metered-%d", i), "agent": "metered", "input": "go", "metadata": map[string]int{"n": i}}
	}
	batchID, v := sendBatch(t, base, items, "?token_budget=1500", 60*time.Second)
	if v.Reasons["stopped"] == 0 || v.Reasons["stopped"]+v.Reasons["natural_end"] != 10 {
		t.Fatalf("the runs ended %+v: want those the budget could not carry stopped, the others at their natural end", v.Reasons)
	}
	// Every step reserves and uses 120: the last refusal came with more
	// than 1,500-120 spent.
	if total := v.Usage.Total(); total > 1500 || total <= 1380 {
		t.Fatalf("the batch used %d tokens: want at most its budget of 1500, and more than 1380", total)
	}
	sum := int64(0)
	for i := range items {
		r := getRun(t, base, fmt.Sprintf("metered-%d", i))
		sum += r.Usage.InputTokens + r.Usage.OutputTokens
		if r.Termination.Reason == pipeline.ReasonStopped && r.Termination.Code != "budget" {
			t.Errorf("run %d stopped with code %q", i, r.Termination.Code)
		}
		if r.BatchID != batchID {
			t.Errorf("run %d names batch %q", i, r.BatchID)
		}
	}
	if sum != v.Usage.Total() {
		t.Fatalf("the runs used %d tokens, the batch says %d", sum, v.Usage.Total())
	}
}

// A batch with a cost budget: at 0.002 USD a step, 0.02 USD carries at
// most 10 of its 30 steps; the runs the budget cannot carry stop with code
// budget, its cost never passes the budget, and each run's cost is its
// steps' at the configured price.
func TestBudgets_a_batch_with_a_cost_budget_stops_at_its_cost(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, budgetConfig))
	workers(t, stack)
	base := serve(t, stack)
	items := make([]map[string]any, 10)
	for i := range items {
		items[i] = map[string]any{"run_id": fmt.Sprintf("priced-%d", i), "agent": "metered", "input": "go"}
	}
	_, v := sendBatch(t, base, items, "?cost_budget=0.02", 60*time.Second)
	if v.Reasons["stopped"] == 0 || v.Reasons["stopped"]+v.Reasons["natural_end"] != 10 {
		t.Fatalf("the runs ended %+v", v.Reasons)
	}
	// Reservations (0.006) hold more than steps use (0.002), so how close
	// the batch came to its budget depends on how its steps overlapped.
	if c := v.Usage.CostUSD; c > 0.02 || c < 0.002 {
		t.Fatalf("the batch cost %g USD: want at most its budget of 0.02, and a step's 0.002 at least", c)
	}
	var sum int64
	for i := range items {
		r := getRun(t, base, fmt.Sprintf("priced-%d", i))
		steps := (r.Usage.InputTokens + r.Usage.OutputTokens) / 120
		if got, want := pipeline.MicroUSD(r.Usage.CostUSD), steps*2000; got != want {
			t.Errorf("run %d: %d steps cost %d micro-USD, want %d", i, steps, got, want)
		}
		if r.Termination.Reason == pipeline.ReasonStopped && (r.Termination.Code != "budget" || !strings.Contains(r.Termination.Detail, "USD")) {
			t.Errorf("run %d stopped with %+v", i, r.Termination)
		}
		sum += pipeline.MicroUSD(r.Usage.CostUSD)
	}
	if sum != pipeline.MicroUSD(v.Usage.CostUSD) {
		t.Fatalf("the runs cost %d micro-USD, the batch says %g USD", sum, v.Usage.CostUSD)
	}
	// The same cost at /metrics, by model.
	if metric := metricValue(t, base, `stepwise_cost_usd_total{model="synthetic"}`); pipeline.MicroUSD(metric) != sum {
		t.Fatalf("stepwise_cost_usd_total says %g USD, the runs cost %d micro-USD", metric, sum)
	}
}

// POST /v1/batches/{id}/cancel cancels the batch's unfinished runs.
func TestBudgets_a_batch_is_cancelled(t *testing.T) {
	stack := connect(t, newInfra(t), parseConfig(t, budgetConfig))
	workers(t, stack)
	base := serve(t, stack)
	slow := `{"provider":"script","turns":[{"text":"slow","tool_calls":[{"name":"sleep","arguments":{"ms":60000}}]},{"text":"done"}]}`
	items := make([]map[string]any, 5)
	for i := range items {
		items[i] = map[string]any{"run_id": fmt.Sprintf("cancel-%d", i), "agent": "metered", "input": "go", "model": json.RawMessage(slow)}
	}
	var batch struct {
		BatchID string `json:"batch_id"`
	}
	if code := httpDo(t, http.MethodPost, base+"/v1/runs/batch", items, &batch); code != http.StatusCreated {
		t.Fatalf("batch: %d", code)
	}
	var out struct {
		Cancelled int `json:"cancelled"`
	}
	if code := httpDo(t, http.MethodPost, base+"/v1/batches/"+batch.BatchID+"/cancel", map[string]string{"reason": "enough"}, &out); code != http.StatusAccepted || out.Cancelled != 5 {
		t.Fatalf("cancel: %d %+v", code, out)
	}
	var v batchView
	testinfra.Eventually(t, 30*time.Second, func() bool {
		httpDo(t, http.MethodGet, base+"/v1/batches/"+batch.BatchID, nil, &v)
		return v.Reasons["cancelled"] == 5
	}, func() string { return fmt.Sprintf("batch %+v", v) })
}

// A step worker that dies while it infers leaves its reservation held. Once
// its claim's lease runs out, the run's next claim settles the hold its
// run recorded (whole: its use is not known), so the tenant's budget
// counts what the run used and nothing more. (Before, every such death kept
// its reservation for good.)
func TestBudgets_the_hold_of_a_worker_that_died_mid_inference_is_given_back(t *testing.T) {
	cfg := parseConfig(t, strings.Replace(budgetConfig, "budgets:\n", "budgets:\n  tenants: {default: {tokens: 100000}}\n", 1))
	stack := connect(t, newInfra(t), cfg)
	ctx, st, now := context.Background(), stack.Store, time.Now()
	tenant := store.BudgetKey{Kind: "tenant", Name: pipeline.DefaultTenant}
	limit := &store.Amounts{Tokens: 100000}
	spent := func() store.Amounts { // a reservation too big to pass reads what is spent
		t.Helper()
		_, s, err := st.Reserve(ctx, tenant, &store.Amounts{Tokens: 1}, store.Amounts{Tokens: 2}, "probe")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// What the dead worker had done: claimed step 0 and reserved for it.
	run := pipeline.Run{ID: "r-died", Agent: "metered", RequestHash: "h"}
	if _, _, err := st.StartRun(ctx, run, []pipeline.Message{{Role: pipeline.RoleUser, Content: "go"}}, now, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimStep(ctx, run.ID, 0, store.Lease{Owner: "dead#1", Until: now.Add(300 * time.Millisecond)}, now); err != nil {
		t.Fatal(err)
	}
	// A claim records its hold with the run before it reserves (ADR 0053).
	if _, err := st.RecordHold(ctx, run.ID, "dead#1"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := st.Reserve(ctx, tenant, limit, store.Amounts{Tokens: 120}, "dead#1"); !ok || err != nil {
		t.Fatalf("reserve: %v, %v", ok, err)
	}

	workers(t, stack)
	base := serve(t, stack)
	v := waitDone(t, base, run.ID, 30*time.Second)
	assertNaturalEnd(t, v, 3) // 3 steps with a call, then the answer
	used := v.Usage.InputTokens + v.Usage.OutputTokens
	if got := spent(); got.Tokens != used {
		t.Fatalf("the tenant's budget counts %d tokens, the run used %d", got.Tokens, used)
	}
}

// metricValue is the value of series (name and labels as /metrics writes
// them) at the gateway's /metrics; 0 when it has none.
func metricValue(t *testing.T, base, series string) float64 {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for line := range strings.Lines(string(text)) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}
