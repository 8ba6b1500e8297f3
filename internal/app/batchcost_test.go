package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/fakebatch"
	"github.com/stepwise-run/stepwise/pipeline"
)

// batchPrices prices the bulk agent's model at 2 USD a million input
// tokens and 8 output, live; through its batches, at half that (no batch
// price set): a step of batchAnswer (10 input tokens, 5 output) costs
// 10×1 + 5×4 = 30 micro-USD, a run of batchSteps steps 90.
const batchPrices = `
budgets:
  reserve_tokens: 15
  prices:
    openai:test-model: {input_per_mtok: 2, output_per_mtok: 8}
`

// batchRunCost is what a run of batchAnswer costs at the batch price, in
// micro-USD.
const batchRunCost = 90

// pricedStack is batchStack of the bulk agent on the fake Batch API, with
// extra appended to its configuration; it returns the gateway's URL.
func pricedStack(t *testing.T, extra string) string {
	t.Helper()
	_, base := batchStack(t, &fakebatch.Server{Answer: batchAnswer}, func(url string) string { return batchConfig(url) + extra })
	return base
}

// Runs whose steps the Batch API answers cost the batch price, half the
// live one unless set: each run's usage, their batch's (of runs) sum, and
// the cost metric of the model.
func TestBatchInference_runs_cost_the_batch_price(t *testing.T) {
	base := pricedStack(t, batchPrices)
	items := make([]map[string]any, 4)
	for i := range items {
		items[i] = map[string]any{"run_id": fmt.Sprintf("r-priced-%d", i), "agent": "bulk", "input": "go"}
	}
	_, v := sendBatch(t, base, items, "", 60*time.Second)
	for i := range items {
		r := getRun(t, base, fmt.Sprintf("r-priced-%d", i))
		if got := pipeline.MicroUSD(r.Usage.CostUSD); got != batchRunCost {
			t.Errorf("run %d (%d input, %d output tokens) cost %d micro-USD; want %d, the batch price", i, r.Usage.InputTokens, r.Usage.OutputTokens, got, batchRunCost)
		}
	}
	if got, want := pipeline.MicroUSD(v.Usage.CostUSD), int64(batchRunCost*len(items)); got != want {
		t.Fatalf("the batch of runs cost %d micro-USD; want %d", got, want)
	}
	if got := metricValue(t, base, `stepwise_cost_usd_total{model="openai:test-model"}`); pipeline.MicroUSD(got) != int64(batchRunCost*len(items)) {
		t.Fatalf("stepwise_cost_usd_total says %g USD; want %d micro-USD", got, batchRunCost*len(items))
	}
}

// A tenant's cost budget counts, and its reservations hold, at the batch
// price: 150 micro-USD carries one run of 90 (a step reserving 15 tokens
// at 4 USD a million, 60; at the live price, 120, the run would stop at
// its second step), and stops the next once it cannot cover a step.
func TestBatchInference_a_tenant_budget_stops_runs_at_the_batch_price(t *testing.T) {
	base := pricedStack(t, batchPrices+"  tenants: {default: {cost_usd: 0.00015}}\n")
	for i, want := range []pipeline.TerminationReason{pipeline.ReasonNaturalEnd, pipeline.ReasonStopped} {
		id := fmt.Sprintf("r-budgeted-%d", i)
		if code := httpDo(t, http.MethodPost, base+"/v1/runs", map[string]any{"run_id": id, "agent": "bulk", "input": "go"}, nil); code != http.StatusCreated {
			t.Fatalf("create %s: %d", id, code)
		}
		r := waitDone(t, base, id, 60*time.Second)
		if r.Termination.Reason != want {
			t.Fatalf("run %s ended %+v, having cost %g USD; want %s", id, r.Termination, r.Usage.CostUSD, want)
		}
		if want == pipeline.ReasonStopped && (r.Termination.Code != "budget" || !strings.Contains(r.Termination.Detail, "tenant budget of default")) {
			t.Fatalf("run %s stopped with %+v; want the tenant's budget named", id, r.Termination)
		}
	}
	if r := getRun(t, base, "r-budgeted-0"); pipeline.MicroUSD(r.Usage.CostUSD) != batchRunCost {
		t.Fatalf("the run the budget carried cost %g USD; want %d micro-USD", r.Usage.CostUSD, batchRunCost)
	}
}
