package fakebatch

import (
	"encoding/json"
	"fmt"
)

// CallsThenAnswers is an Answer of a chat completion model that calls tool
// once a step, until calls tool results are in the request, then answers
// "done after <calls>": an agent's run of calls+1 steps through the Batch
// API. Each answer reports 10 prompt and 5 completion tokens.
func CallsThenAnswers(calls int, tool string) func(customID string, body json.RawMessage) (json.RawMessage, *LineError) {
	return func(customID string, body json.RawMessage) (json.RawMessage, *LineError) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, &LineError{Status: 400, Code: "invalid_json", Message: err.Error()}
		}
		results := 0
		for _, m := range req.Messages {
			if m.Role == "tool" {
				results++
			}
		}
		msg := map[string]any{"role": "assistant", "content": fmt.Sprintf("done after %d", results)}
		finish := "stop"
		if results < calls {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": fmt.Sprintf("call_b%d", results),
				"type": "function", "function": map[string]any{"name": tool, "arguments": fmt.Sprintf(`{"n":%d}`, results)}}}}
			finish = "tool_calls"
		}
		out, err := json.Marshal(map[string]any{"id": "chatcmpl-" + customID, "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
		if err != nil {
			return nil, &LineError{Status: 500, Code: "server_error", Message: err.Error()}
		}
		return out, nil
	}
}
