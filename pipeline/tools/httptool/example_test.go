package httptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/tools"
	"github.com/stepwise-run/stepwise/pipeline/tools/httptool"
)

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"key":%q,"got":%s}`, r.Header.Get("Idempotency-Key"), body)
	}))
	defer srv.Close()

	tool, err := httptool.New("lookup_order", config.HTTPExecutor{URL: srv.URL})
	if err != nil {
		panic(err)
	}
	out, err := tool.Execute(context.Background(), tools.Call{
		RunID: "r-1", CallID: "c-1", Attempt: 1, Arguments: json.RawMessage(`{"order":"o-9"}`),
	})
	fmt.Println(string(out), err)
	// Output:
	// {"key":"r-1:c-1","got":{"order":"o-9"}} <nil>
}
