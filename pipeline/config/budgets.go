package config

import "fmt"

// DefaultReserveTokens is what a step holds back from its budgets before
// its inference when budgets.reserve_tokens is not set.
const DefaultReserveTokens = 2000

// Budgets caps the tokens a tenant's runs may use (yaml key "budgets"); a
// batch's budget comes with the batch (POST /v1/runs/batch?token_budget=).
// Before each inference a step reserves ReserveTokens from every budget its
// run counts against, and settles the reservation with what the inference
// used; a run whose budget cannot cover the reservation ends stopped, code
// budget.
//
//	budgets:
//	  reserve_tokens: 2000
//	  tenants:
//	    acme: {tokens: 5000000}
type Budgets struct {
	ReserveTokens int64             `json:"reserve_tokens,omitempty"`
	Tenants       map[string]Budget `json:"tenants,omitempty"`
}

// Budget is a cap on tokens, input and output together.
type Budget struct {
	Tokens int64 `json:"tokens"`
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
	return bud, ok && bud.Tokens > 0
}

func (b Budgets) check(ps *problems, path string) {
	if b.ReserveTokens < 0 {
		ps.add(field(path, "reserve_tokens"), fmt.Sprintf("%d: want a positive number of tokens", b.ReserveTokens))
	}
	for name, bud := range b.Tenants {
		p := field(field(path, "tenants"), name)
		if bud.Tokens <= 0 {
			ps.add(field(p, "tokens"), fmt.Sprintf("%d: want a positive number of tokens", bud.Tokens))
		}
	}
}
