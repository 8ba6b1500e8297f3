package builtin

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stepwise-run/stepwise/pipeline"
)

// The pure part of compaction: which tool results a prompt shows by
// reference, where a compaction cuts the conversation, and the prompt a
// summary makes. Nothing here reads a clock, the store or a model.

// inputEnd is the end of the run's input at the head of msgs — the
// messages before the first assistant message —, which compaction always
// sends as it is.
func inputEnd(msgs []pipeline.Message) int {
	for i, m := range msgs {
		if m.Role == pipeline.RoleAssistant {
			return i
		}
	}
	return len(msgs)
}

// cuttable reports whether msgs may be cut before index i without parting
// a tool result from the assistant message whose call it answers: i is the
// end, or msgs[i] is not a tool message.
func cuttable(msgs []pipeline.Message, i int) bool {
	return i == len(msgs) || msgs[i].Role != pipeline.RoleTool
}

// nextCut returns where a new compaction of msgs cuts: the first cut after
// from whose rest, msgs[cut:], is estimated at target tokens or fewer, but
// never into the last keepLast messages (widened to a whole turn). ok is
// false when no cut after from leaves them whole: there is nothing more to
// compact.
func nextCut(msgs []pipeline.Message, from, keepLast, target int) (cut int, ok bool) {
	last := max(len(msgs)-keepLast, 0)
	for last > from && !cuttable(msgs, last) {
		last--
	}
	if last <= from {
		return 0, false
	}
	rest := messagesTokens(msgs[from+1:])
	for i := from + 1; i < last; i++ {
		if cuttable(msgs, i) && rest <= target {
			return i, true
		}
		rest -= messageTokens(msgs[i])
	}
	return last, true
}

// withSummary is the prompt s makes of msgs: the run's input, s's text
// standing in for msgs[s.From:s.Through], and the rest.
func withSummary(msgs []pipeline.Message, s Summary) []pipeline.Message {
	out := make([]pipeline.Message, 0, s.From+1+len(msgs)-s.Through)
	out = append(out, msgs[:s.From]...)
	out = append(out, pipeline.Message{Role: pipeline.RoleSystem, Content: summaryText(s)})
	return append(out, msgs[s.Through:]...)
}

func summaryText(s Summary) string {
	head := fmt.Sprintf("[stepwise: messages %d to %d of this conversation are left out to keep the prompt within its budget", s.From, s.Through-1)
	if !s.Summarised {
		return head + ".]"
	}
	return head + "; a summary of them follows.]\n" + s.Text
}

// transcript writes msgs as the text a summariser reads, after the summary
// it extends (empty for none).
func transcript(earlier string, msgs []pipeline.Message) string {
	var b strings.Builder
	if earlier != "" {
		b.WriteString("Summary of the conversation before:\n" + earlier + "\n\nThe conversation after it:\n")
	}
	for _, m := range msgs {
		switch {
		case m.Role == pipeline.RoleTool:
			fmt.Fprintf(&b, "tool result of call %s: %s\n", m.ToolCallID, m.Content)
		case m.Content != "":
			fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "%s called %s (call %s) with %s\n", m.Role, c.Name, c.ID, c.Arguments)
		}
	}
	return b.String()
}

// referenced returns msgs with every tool result longer than maxBytes
// replaced by a reference to it (referenceTo), but for fetch_result's own
// answers, which are short by construction. msgs is not changed: the
// first replacement copies it.
func referenced(msgs []pipeline.Message, maxBytes int) []pipeline.Message {
	out, copied := msgs, false
	var tools map[string]string // call id → tool, read when first needed
	for i, m := range msgs {
		if m.Role != pipeline.RoleTool || len(m.Content) <= maxBytes {
			continue
		}
		if tools == nil {
			tools = callTools(msgs)
		}
		if tools[m.ToolCallID] == FetchResult {
			continue
		}
		if !copied {
			out, copied = append([]pipeline.Message(nil), msgs...), true
		}
		out[i].Content = referenceTo(m, maxBytes)
	}
	return out
}

// callTools maps the call ids of msgs' assistant messages to their tools.
func callTools(msgs []pipeline.Message) map[string]string {
	out := map[string]string{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			out[c.ID] = c.Name
		}
	}
	return out
}

// referenceTo is what a prompt shows of a tool result too long to show:
// its size, its start and how to read it.
func referenceTo(m pipeline.Message, maxBytes int) string {
	return fmt.Sprintf("[stepwise: this result is %d bytes, too long to show here; it is kept as ref %q. It starts: %q. "+
		"Read it with %s {\"ref\": %q}, %d bytes at a time.]",
		len(m.Content), m.ToolCallID, head(m.Content, min(200, maxBytes/4)), FetchResult, m.ToolCallID, pieceBytes(maxBytes))
}

// head is at most n bytes of s, ending at a UTF-8 boundary.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
