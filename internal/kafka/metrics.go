package kafka

import "github.com/rcrowley/go-metrics"

// Sarama records client metrics (request rates, sizes, latencies
// histograms) into go-metrics registries on every request, about 4 % of a
// worker's CPU under load, and stepwise reads none of them: they are
// turned off for the whole process, before any client exists.
func init() { metrics.UseNilMetrics = true }
