// Package metrics holds the Prometheus metrics a stepwise process exports
// at /metrics: what its workers and gateway did, counted as they do it.
// A nil *Set records nothing, so code that is given none needs no checks.
//
//	m := metrics.New()            // one per process, on its own registry
//	m.StepCommitted("assistant", 230*time.Millisecond)
//	http.Handle("/metrics", m.Handler())
package metrics
