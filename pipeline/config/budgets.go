package config

import (
	"fmt"
	"math"

	"github.com/stepwise-run/stepwise/pipeline"
)

// DefaultReserveTokens is what a step holds back from its budgets before
// its inference when budgets.reserve_tokens is not set.
const DefaultReserveTokens = 2000

// Budgets caps the tokens, and their cost, a tenant's runs may use (yaml
// key "budgets"); a batch's budget comes with the batch
// (POST /v1/runs/batch?token_budget=&cost_budget=). Before each inference a
// step reserves ReserveTokens, and their cost at its model's higher price,
// from every budget its run counts against, and settles the reservation
// with what the inference used; a run whose budget cannot cover the
// reservation ends stopped, code budget. Costs come from Prices, by model
// key (Model.Key; "script" for a run's own script); a model without a price
// costs nothing. A step answered through the provider's Batch API (a model
// in batch mode, ADR 0071) costs, and reserves, at the model's batch price
// (Price.Batch).
//
//	budgets:
//	  reserve_tokens: 2000
//	  tenants:
//	    acme: {tokens: 5000000, cost_usd: 40}
//	  prices:
//	    openai:gpt-4o-mini: {input_per_mtok: 0.15, output_per_mtok: 0.60}
type Budgets struct {
	ReserveTokens int64             `json:"reserve_tokens,omitempty"`
	Tenants       map[string]Budget `json:"tenants,omitempty"`
	Prices        map[string]Price  `json:"prices,omitempty"`
}

// Budget is a cap on tokens (input and output together) and on their cost
// in USD; a zero field is no cap, and one of them is set.
type Budget struct {
	Tokens  int64   `json:"tokens,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// MicroUSD is the cost cap in millionths of a USD, the unit budgets count
// in.
func (b Budget) MicroUSD() int64 { return pipeline.MicroUSD(b.CostUSD) }

// Price is what a model's tokens cost, in USD per million: live, and
// through the provider's Batch API (nil: half the live price, as OpenAI's
// Batch API charges).
type Price struct {
	InputPerMTok       float64  `json:"input_per_mtok"`
	OutputPerMTok      float64  `json:"output_per_mtok"`
	BatchInputPerMTok  *float64 `json:"batch_input_per_mtok,omitempty"`
	BatchOutputPerMTok *float64 `json:"batch_output_per_mtok,omitempty"`
}

// BatchDiscount is what a batch price is of the live one when the
// configuration does not give it: OpenAI's Batch API charges half.
const BatchDiscount = 0.5

// Batch is the price of the model's tokens answered through the
// provider's Batch API: batch_input_per_mtok and batch_output_per_mtok,
// each half the live price when not set.
func (p Price) Batch() Price {
	batch := func(set *float64, live float64) float64 {
		if set != nil {
			return *set
		}
		return live * BatchDiscount
	}
	return Price{InputPerMTok: batch(p.BatchInputPerMTok, p.InputPerMTok), OutputPerMTok: batch(p.BatchOutputPerMTok, p.OutputPerMTok)}
}

// MicroUSD is the cost of the tokens at p, in millionths of a USD.
func (p Price) MicroUSD(inputTokens, outputTokens int64) int64 {
	return int64(math.Round(float64(inputTokens)*p.InputPerMTok + float64(outputTokens)*p.OutputPerMTok))
}

// Most is the cost of tokens at p's higher price: what a reservation of
// that many tokens holds, not knowing yet how they split.
func (p Price) Most(tokens int64) int64 {
	return int64(math.Ceil(float64(tokens) * max(p.InputPerMTok, p.OutputPerMTok)))
}

// Reserve is ReserveTokens with its default.
func (b Budgets) Reserve() int64 {
	if b.ReserveTokens <= 0 {
		return DefaultReserveTokens
	}
	return b.ReserveTokens
}

// Tenant returns tenant's budget, if it has one.
func (b Budgets) Tenant(tenant string) (Budget, bool) {
	bud, ok := b.Tenants[tenant]
	return bud, ok && (bud.Tokens > 0 || bud.CostUSD > 0)
}

// Price returns the price of the model named key (zero: free).
func (b Budgets) Price(key string) Price { return b.Prices[key] }

func (b Budgets) check(ps *problems, path string) {
	if b.ReserveTokens < 0 {
		ps.add(field(path, "reserve_tokens"), fmt.Sprintf("%d: want a positive number of tokens", b.ReserveTokens))
	}
	for name, bud := range b.Tenants {
		p := field(field(path, "tenants"), name)
		if bud.Tokens < 0 || bud.CostUSD < 0 || bud.Tokens == 0 && bud.CostUSD == 0 {
			ps.add(p, fmt.Sprintf("tokens %d, cost_usd %g: want a positive tokens, cost_usd or both", bud.Tokens, bud.CostUSD))
		}
	}
	for key, p := range b.Prices {
		if batch := p.Batch(); min(p.InputPerMTok, p.OutputPerMTok, batch.InputPerMTok, batch.OutputPerMTok) < 0 {
			ps.add(field(field(path, "prices"), key), fmt.Sprintf("input_per_mtok %g, output_per_mtok %g, batch_input_per_mtok %g, batch_output_per_mtok %g: a price is not negative",
				p.InputPerMTok, p.OutputPerMTok, batch.InputPerMTok, batch.OutputPerMTok))
		}
	}
}
