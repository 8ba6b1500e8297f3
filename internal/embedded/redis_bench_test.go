package embedded_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/embedded"
)

// BenchmarkStartRedis_a_command_among_keys times one GET on the embedded
// Redis holding n keys with a time to live (an ended run's keys have one):
// it should not grow with n (expire.go; docs/benchmarks.md).
func BenchmarkStartRedis_a_command_among_keys(b *testing.B) {
	for _, n := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			r, err := embedded.StartRedis("127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			opts, err := redis.ParseURL(r.URL())
			if err != nil {
				b.Fatal(err)
			}
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			ctx := context.Background()
			for i := 0; i < n; i += 1000 {
				p := rdb.Pipeline()
				for j := i; j < min(n, i+1000); j++ {
					p.Set(ctx, fmt.Sprintf("sw:{run-%d}:run", j), "v", 7*24*time.Hour)
				}
				if _, err := p.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if err := rdb.Get(ctx, "absent").Err(); err != redis.Nil {
					b.Fatal(err)
				}
			}
		})
	}
}
