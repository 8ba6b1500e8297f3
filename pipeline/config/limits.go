package config

import "fmt"

// Limits are the flow-control limits every worker shares (yaml key
// "limits"): held in Redis, so two step workers together stay under a
// model's limit as one would. A step whose model is at a limit is deferred,
// not failed, and holds no worker slot while it waits. ADR 0015.
//
//	limits:
//	  models:
//	    openai:gpt-4o-mini: {concurrency: 50, rpm: 500, tpm: 200000, tenant_share: 0.5}
//	    synthetic: {concurrency: 8}
type Limits struct {
	// Models are by model key (Model.Key): "<provider>:<name>", or the
	// provider alone for a model without a name (script, synthetic).
	Models map[string]Limit `json:"models,omitempty"`
	// Tools are by tool name: concurrency and rpm only (a tool has no
	// tokens, and its calls do not say their tenant).
	Tools map[string]Limit `json:"tools,omitempty"`
}

// Limit bounds the use of one model; a zero field is no bound.
type Limit struct {
	// Concurrency caps the inferences in flight at once.
	Concurrency int `json:"concurrency,omitempty"`
	// RPM caps the inferences started per minute (smoothed: a burst of up
	// to RPM, then one every minute/RPM).
	RPM int `json:"rpm,omitempty"`
	// TPM caps the tokens used per minute (input and output, as the
	// provider reports them): once a minute's tokens reach it, inferences
	// wait for the minute to pass.
	TPM int64 `json:"tpm,omitempty"`
	// TenantShare, between 0 and 1, is the part of Concurrency one tenant
	// may hold, so no tenant starves the others: 0.5 lets any tenant use
	// half the slots at most (rounded up). 0 or 1: no share.
	TenantShare float64 `json:"tenant_share,omitempty"`
	// BatchShare is TenantShare for the runs of one batch
	// (POST /v1/runs/batch): no batch takes more than its share.
	BatchShare float64 `json:"batch_share,omitempty"`
}

// TenantSlots is how many of the limit's slots one tenant may hold; 0 for
// no bound of its own.
func (l Limit) TenantSlots() int { return l.slots(l.TenantShare) }

// BatchSlots is how many of the limit's slots one batch may hold; 0 for no
// bound of its own.
func (l Limit) BatchSlots() int { return l.slots(l.BatchShare) }

// slots is share of Concurrency, rounded up (0: no share).
func (l Limit) slots(share float64) int {
	if l.Concurrency == 0 || share <= 0 || share >= 1 {
		return 0
	}
	return max(int(float64(l.Concurrency)*share+0.999999), 1)
}

// Model returns the limit of model key, if one is set.
func (l Limits) Model(key string) (Limit, bool) {
	lim, ok := l.Models[key]
	return lim, ok && (lim.Concurrency > 0 || lim.RPM > 0 || lim.TPM > 0)
}

// Tool returns the limit of tool name, if one is set.
func (l Limits) Tool(name string) (Limit, bool) {
	lim, ok := l.Tools[name]
	return lim, ok && (lim.Concurrency > 0 || lim.RPM > 0)
}

func (l Limits) check(ps *problems, path string) {
	for name, lim := range l.Tools {
		p := field(field(path, "tools"), name)
		if lim.TPM != 0 {
			ps.add(field(p, "tpm"), "a tool has no tokens: limit its concurrency or rpm")
		}
		if lim.TenantShare != 0 || lim.BatchShare != 0 {
			ps.add(field(p, "tenant_share"), "not for tools: their calls do not say their tenant or batch")
		}
		lim.TPM, lim.TenantShare, lim.BatchShare = 0, 0, 0
		checkLimit(ps, p, lim)
	}
	for key, lim := range l.Models {
		checkLimit(ps, field(field(path, "models"), key), lim)
	}
}

func checkLimit(ps *problems, p string, lim Limit) {
	if lim.Concurrency < 0 {
		ps.add(field(p, "concurrency"), fmt.Sprintf("%d: want 0 (none) or more", lim.Concurrency))
	}
	if lim.RPM < 0 {
		ps.add(field(p, "rpm"), fmt.Sprintf("%d: want 0 (none) or more", lim.RPM))
	}
	if lim.TPM < 0 {
		ps.add(field(p, "tpm"), fmt.Sprintf("%d: want 0 (none) or more", lim.TPM))
	}
	if lim.TenantShare < 0 || lim.TenantShare > 1 {
		ps.add(field(p, "tenant_share"), fmt.Sprintf("%g: want a share between 0 and 1", lim.TenantShare))
	}
	if lim.TenantShare > 0 && lim.TenantShare < 1 && lim.Concurrency == 0 {
		ps.add(field(p, "tenant_share"), "shares concurrency: set concurrency too")
	}
	if lim.BatchShare < 0 || lim.BatchShare > 1 {
		ps.add(field(p, "batch_share"), fmt.Sprintf("%g: want a share between 0 and 1", lim.BatchShare))
	}
	if lim.BatchShare > 0 && lim.BatchShare < 1 && lim.Concurrency == 0 {
		ps.add(field(p, "batch_share"), "shares concurrency: set concurrency too")
	}
}
