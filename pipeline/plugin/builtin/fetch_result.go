package builtin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
)

// FetchResult is the name of the tool compaction offers: it reads a tool
// result a prompt shows by reference, a piece at a time. Its calls never
// reach a tool worker: ToolGate answers them from the run's conversation,
// where every result is kept whole.
const FetchResult = "fetch_result"

// fetchResultSpec is fetch_result as the model is told about it.
var fetchResultSpec = model.ToolSpec{
	Name: FetchResult,
	Description: "Read a tool result that was too long to show in the conversation, by the ref it was shown with. " +
		"It answers one piece of the result, starting at offset (in bytes, default 0), and says where the next piece starts.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string","description":"the ref the result was shown with"},` +
		`"offset":{"type":"integer","minimum":0,"description":"where to start, in bytes"}},"required":["ref"]}`),
}

// pieceBytes is the most of a result one fetch_result call answers: half
// of what a prompt shows whole, so that the answer, notice and all, is
// itself shown whole.
func pieceBytes(maxBytes int) int { return max(maxBytes/2, 1) }

// fetchResult answers a fetch_result call at ToolGate with a set_result
// intercept: the piece of the result the call asks for, from msgs (the
// run's conversation), or an error the model can act on.
func fetchResult(call pipeline.ToolCall, msgs []pipeline.Message, maxBytes int) (plugin.Command, error) {
	in := pipeline.Intercept{Action: pipeline.GateSetResult, Reason: "answered by the compaction plugin"}
	var args struct {
		Ref    string `json:"ref"`
		Offset int    `json:"offset"`
	}
	raw := call.Arguments
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if json.Unmarshal(raw, &args) != nil || args.Ref == "" || args.Offset < 0 {
		in.Error = `invalid arguments for fetch_result: want {"ref": "<the ref a result was shown with>", "offset": <bytes, 0 or more>}`
	} else if text, found := resultOf(msgs, args.Ref); !found {
		in.Error = fmt.Sprintf("no tool result of this run has ref %q", args.Ref)
	} else {
		b, err := json.Marshal(piece(text, args.Ref, args.Offset, pieceBytes(maxBytes)))
		if err != nil {
			return plugin.Command{}, err
		}
		in.Result = b
	}
	var cmd plugin.Command
	return cmd, cmd.Schedule(plugin.ToolIntercept, plugin.Intercept{Intercept: in, CallID: call.ID})
}

// resultOf is the content of the tool message of msgs that answers call
// ref.
func resultOf(msgs []pipeline.Message, ref string) (string, bool) {
	for _, m := range msgs {
		if m.Role == pipeline.RoleTool && m.ToolCallID == ref {
			return m.Content, true
		}
	}
	return "", false
}

// piece is up to n bytes of text from offset (moved back to a UTF-8
// boundary), with a notice of where it lies and where the next starts.
func piece(text, ref string, offset, n int) string {
	if offset >= len(text) {
		return fmt.Sprintf("[stepwise: result %s is %d bytes; offset %d is past its end.]", ref, len(text), offset)
	}
	for offset > 0 && !utf8.RuneStart(text[offset]) {
		offset--
	}
	end := offset + len(head(text[offset:], n))
	if end == offset { // n is smaller than the rune at offset
		_, size := utf8.DecodeRuneInString(text[offset:])
		end += size
	}
	if end >= len(text) {
		return fmt.Sprintf("%s\n[stepwise: bytes %d to %d of result %s, its end.]", text[offset:], offset, len(text), ref)
	}
	return fmt.Sprintf("%s\n[stepwise: bytes %d to %d of result %s, of %d; the next piece: %s {\"ref\": %q, \"offset\": %d}]",
		text[offset:end], offset, end, ref, len(text), FetchResult, ref, end)
}
