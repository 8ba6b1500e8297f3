package store

import (
	"testing"

	"github.com/stepwise-run/stepwise/pipeline"
)

// Two claims of one run's conversation at once (a claim that failed and
// left it lent, or a second one while the first appends) do not append
// into the same array: the second gets the messages with no room, so its
// append copies them and the first's messages stay as it wrote them.
func TestConversations_a_second_get_while_lent_copies(t *testing.T) {
	var c conversations
	msgs := make([]pipeline.Message, 1, 8)
	msgs[0] = pipeline.Message{Role: pipeline.RoleUser, Content: "hello"}
	c.put("r", conversation{created: 1, msgs: msgs})

	first, second := c.get("r"), c.get("r")
	if cap(first.msgs) == len(first.msgs) {
		t.Fatalf("the first get has no room to append: %d of %d", len(first.msgs), cap(first.msgs))
	}
	if cap(second.msgs) != len(second.msgs) {
		t.Fatalf("a get while lent has room to append: %d of %d", len(second.msgs), cap(second.msgs))
	}
	a := append(first.msgs, pipeline.Message{Role: pipeline.RoleAssistant, Content: "first"})
	b := append(second.msgs, pipeline.Message{Role: pipeline.RoleAssistant, Content: "second"})
	if a[1].Content != "first" || b[1].Content != "second" {
		t.Fatalf("the two appends share an array: %q and %q", a[1].Content, b[1].Content)
	}

	c.put("r", conversation{created: 1, msgs: a})
	if got := c.get("r"); cap(got.msgs) == len(got.msgs) {
		t.Errorf("the first get after a put has no room to append: %d of %d", len(got.msgs), cap(got.msgs))
	}
}
