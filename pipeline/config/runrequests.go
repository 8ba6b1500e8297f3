package config

import "fmt"

// DefaultMaxActive is run_requests.max_active when the file names none.
const DefaultMaxActive = 10000

// RunRequests holds how runs requested on the run-requests topic are
// admitted (yaml key "run_requests", ADR 0056).
type RunRequests struct {
	// MaxActive bounds the deployment's active runs (every run not yet
	// retired: created, running, waiting) for runs requested on Kafka: a
	// request is admitted only while they are fewer; until then it waits
	// in Kafka. Runs created over HTTP count but are never refused.
	// Default 10000.
	MaxActive int `json:"max_active,omitempty"`
	// TenantShare is the share of MaxActive one tenant's active runs may
	// hold, from above 0 to 1; default 1 (no bound below MaxActive).
	TenantShare float64 `json:"tenant_share,omitempty"`
	// BatchShare is the share of MaxActive one batch's active runs may
	// hold, from above 0 to 1; default 1.
	BatchShare float64 `json:"batch_share,omitempty"`
}

func (r *RunRequests) setDefaults() {
	if r.MaxActive == 0 {
		r.MaxActive = DefaultMaxActive
	}
	if r.TenantShare == 0 {
		r.TenantShare = 1
	}
	if r.BatchShare == 0 {
		r.BatchShare = 1
	}
}

func (r RunRequests) check(ps *problems, path string) {
	if r.MaxActive < 0 {
		ps.add(field(path, "max_active"), fmt.Sprintf("%d is negative", r.MaxActive))
	}
	for _, s := range []struct {
		name  string
		share float64
	}{{"tenant_share", r.TenantShare}, {"batch_share", r.BatchShare}} {
		if !(s.share > 0 && s.share <= 1) {
			ps.add(field(path, s.name), fmt.Sprintf("%g: want a share above 0, at most 1", s.share))
		}
	}
}

// TenantMax is how many active runs one tenant may hold: TenantShare of
// MaxActive, at least 1.
func (r RunRequests) TenantMax() int { return share(r.MaxActive, r.TenantShare) }

// BatchMax is how many active runs one batch may hold: BatchShare of
// MaxActive, at least 1.
func (r RunRequests) BatchMax() int { return share(r.MaxActive, r.BatchShare) }

func share(n int, s float64) int { return max(1, int(float64(n)*s)) }
