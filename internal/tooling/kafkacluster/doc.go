// Package kafkacluster runs an Apache Kafka cluster on this machine, without
// Docker: KRaft nodes that are each a broker and a controller, started as
// Java processes from Apache Kafka's own artifacts, which Maven fetches from
// Maven Central once per machine into a cache outside the repository. Tests
// that claim Kafka behaviour, the chaos harness and the bench use it;
// scripts/kafka is its command line.
//
//	c, err := kafkacluster.Up(ctx, kafkacluster.Options{Dir: dir, Nodes: 3})
//	brokers := c.Brokers() // "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"
//	err = c.Kill(2)        // node 2 killed -9
//	err = c.Start(ctx, 2)  // the same node back, on its data
//	err = c.Down()         // every node stopped, Dir removed
//
// A cluster's state (its nodes' ports and process ids) is kept in
// Dir/cluster.json, so one process may start a cluster and another kill
// a node of it or take it down. Nodes run with small heaps and log to
// Dir/node-I/server.log.
package kafkacluster
