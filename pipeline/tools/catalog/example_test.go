package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline/tools/catalog"
)

func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	// A tool worker publishes what its MCP servers list…
	err = catalog.New(rdb, "sw").Publish(ctx, map[string]catalog.Spec{
		"get_sum": {Description: "Adds two numbers.", Parameters: json.RawMessage(`{"type":"object"}`)},
	}, 5*time.Minute)
	if err != nil {
		panic(err)
	}

	// …and a step worker reads the tools its agent names.
	got, err := catalog.New(rdb, "sw").Get(ctx, []string{"get_sum", "not_published"})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(got), got["get_sum"].Description, string(got["get_sum"].Parameters))
	// Output:
	// 1 Adds two numbers. {"type":"object"}
}
