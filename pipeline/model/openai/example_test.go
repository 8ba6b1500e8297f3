package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/model/openai"
)

func Example() {
	// A stand-in for an OpenAI-compatible endpoint, streaming its answer.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"}}]}`,
			`{"choices":[{"index":0,"delta":{"content":", world"},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
	}))
	defer srv.Close()
	os.Setenv("EXAMPLE_LLM_KEY", "sk-example")

	var cfg config.Model // as read from the agent's "model" in the config file
	_ = json.Unmarshal([]byte(`{"provider": "openai", "name": "my-model", "base_url": "`+srv.URL+`/v1",
		"api_key_env": "EXAMPLE_LLM_KEY", "temperature": 0, "timeout": "30s"}`), &cfg)
	m, err := openai.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := m.Infer(context.Background(), model.Request{
		System:   "You are terse.",
		Messages: []pipeline.Message{{Role: pipeline.RoleUser, Content: "Greet the world."}},
		OnText:   func(delta string) { fmt.Printf("delta %q\n", delta) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s (%d in, %d out)\n", resp.Text, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// delta "Hello"
	// delta ", world"
	// Hello, world (9 in, 3 out)
}
