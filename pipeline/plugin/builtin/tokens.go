package builtin

import (
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
)

// BytesPerToken and TokensPerMessage make compaction's estimate of what a
// request costs (EstimateTokens): a token per 4 bytes of text, rounded
// up, and 4 tokens for each message's framing. Tokenizers of English text
// and JSON land near 4 bytes a token; text of other scripts takes more
// tokens a byte, so a budget for such runs wants a margin (ADR 0067).
const (
	BytesPerToken    = 4
	TokensPerMessage = 4
)

// EstimateTokens estimates the input tokens of an inference: its system
// prompt; each message's role, content, tool calls (id, name, arguments)
// and tool_call_id; each tool's name, description and parameters — by
// BytesPerToken, plus TokensPerMessage a message. It reads no tokenizer
// and asks no model, so every worker estimates a request alike.
func EstimateTokens(system string, msgs []pipeline.Message, tools []model.ToolSpec) int {
	n := len(system)
	for _, t := range tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return tokensOf(n) + messagesTokens(msgs)
}

// messagesTokens is EstimateTokens of msgs alone.
func messagesTokens(msgs []pipeline.Message) int {
	t := 0
	for _, m := range msgs {
		t += messageTokens(m)
	}
	return t
}

func messageTokens(m pipeline.Message) int {
	n := len(m.Role) + len(m.Content) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return tokensOf(n) + TokensPerMessage
}

func tokensOf(bytes int) int { return (bytes + BytesPerToken - 1) / BytesPerToken }
