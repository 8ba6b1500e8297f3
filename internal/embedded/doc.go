// Package embedded runs the infrastructure stepwise needs inside the current
// process: a Kafka-protocol broker (franz-go's kfake) and a Redis
// (miniredis). `stepwise dev` and `stepwise infra` use them so that one
// binary is a whole stack, and tests use them when nothing else is given.
// Outside clients (kcat, redis-cli, other stepwise programs) reach them over
// TCP like the real servers.
//
//	k, err := embedded.StartKafka("127.0.0.1:9092", embedded.WithDataDir(".stepwise/kafka"))
//	if err != nil { ... }
//	defer k.Close()
//	r, err := embedded.StartRedis("127.0.0.1:0")
//	if err != nil { ... }
//	defer r.Close()
//	fmt.Println("kafka", strings.Join(k.Addrs(), ","), "redis", r.URL())
//
// Both are fakes: close to the real servers for what stepwise uses, not for
// everything. Neither is for production. Unlike Kafka, the broker drops the
// records every consumer group reading them has committed (trim.go,
// docs/adr/0031-the-embedded-broker-drops-what-is-read.md), so that its
// memory holds the work still to be read.
package embedded
