package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// A gateway over an in-process Redis and pubsub: one run created, one
// refused with every problem named.
func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	pubsub := gochannel.NewGoChannel(gochannel.Config{}, nil)
	defer pubsub.Close()

	srv, err := gateway.New(gateway.Config{
		Store:     store.New(rdb),
		Publisher: pubsub,
		Names:     topics.NewNames(""),
		Agents:    func(name string) bool { return name == "assistant" },
	})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	for _, body := range []string{
		`{"run_id": "r-1", "agent": "assistant", "input": "What is 2+2?"}`,
		`{"agent": "nobody", "input": ""}`,
	} {
		res, err := http.Post(ts.URL+"/v1/runs", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Println(res.StatusCode, strings.TrimSpace(string(answer)))
	}
	// Output:
	// 201 {"run_id":"r-1","status":"created"}
	// 400 {"error":{"code":"invalid_request","message":"invalid run: agent \"nobody\" is not configured; input is empty text","details":["agent \"nobody\" is not configured","input is empty text"]}}
}
