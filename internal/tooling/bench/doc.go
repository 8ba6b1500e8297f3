// Package bench is `stepwise bench`: it runs fixed workloads (scenarios)
// through a whole stack — the real handlers, store and transport — and
// reports what an agent step costs and how fast steps go, as JSON.
//
// Counts are exact (a go-redis hook counts round trips, INFO commandstats
// the commands scripts included, a wrapper the produce requests); rates and
// latencies are wall-clock on the machine the report names, so compare
// them only side by side, on one machine, in one run.
//
//	rep, err := bench.Run(ctx, bench.Options{Scenarios: []string{"throughput"}, Kafka: brokers, Redis: url})
package bench
