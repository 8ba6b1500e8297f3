// Package testinfra gives tests the real infrastructure they talk to: a
// Redis and a Kafka-protocol broker, each private to the test.
//
// Redis, in order of preference: STEPWISE_TEST_REDIS when set (a URL; the
// test gets its own logical database there is not guaranteed, so such runs
// should not run packages in parallel); a Redis container when
// STEPWISE_TEST_CONTAINERS=1 and a Docker engine answers; a private
// redis-server from PATH on a random port; miniredis when no redis-server is
// installed, said once in the output. With CI=true a missing redis-server
// fails the test instead.
//
//	url := testinfra.Redis(t)          // redis://127.0.0.1:PORT/0
//	rdb := testinfra.RedisClient(t)    // a go-redis client on a private server
//
// A Redis Cluster: redis-servers with --cluster-enabled yes on random ports
// (their bus ports, +10000, free too), joined with `redis-cli --cluster
// create`, optionally with replicas; Failover promotes the replica of the
// primary that serves a key. Skipped without redis-server and redis-cli,
// failed with CI=true.
//
//	c := testinfra.RedisCluster(t, 3, 1) // 3 primaries, a replica each
//	url := c.URL                          // redis://A?addr=B&addr=C
//	from, to := c.Failover("sw:{r1}:run")
//
// Kafka, in order of preference: STEPWISE_TEST_KAFKA when set (brokers,
// comma-separated; shared, so use unique topic and group names); a Kafka
// container when STEPWISE_TEST_CONTAINERS=1 and a Docker engine answers; an
// in-process kfake broker on a random port.
//
//	brokers := testinfra.Kafka(t)      // []string{"127.0.0.1:PORT"}
//
// The Docker engine is asked once per test process, with a 2 s deadline;
// when it does not answer, both fall back to their in-process choices and
// say so once.
//
// Tests wait on conditions, never on a fixed sleep:
//
//	testinfra.Eventually(t, 10*time.Second, func() bool { return n.Load() == 3 },
//		func() string { return fmt.Sprint(n.Load(), " handled") })
package testinfra
