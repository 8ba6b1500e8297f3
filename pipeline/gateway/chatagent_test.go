package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/gateway"
)

// Both chat routes take the agent of a chat's first turn as ?agent=NAME
// (the form of the routes' contract), in the body (the AI SDK's agent,
// AG-UI's forwardedProps.agent), or in both when they agree; a request
// whose query and body name different agents, or whose query names two,
// is refused and creates nothing.
func TestChatRoutes_take_the_agent_in_the_query_or_the_body(t *testing.T) {
	h := newHarness(t)
	aiSDK := func(id, agent string) map[string]any {
		b := map[string]any{"id": id, "trigger": "submit-message", "messages": []any{userMsg("hi")}}
		if agent != "" {
			b["agent"] = agent
		}
		return b
	}
	agUI := func(id, agent string) map[string]any {
		b := map[string]any{"threadId": id, "runId": "r1", "messages": []any{map[string]any{"id": "m1", "role": "user", "content": "hi"}}}
		if agent != "" {
			b["forwardedProps"] = map[string]any{"agent": agent}
		}
		return b
	}
	routes := []struct {
		name, path string
		body       func(id, agent string) map[string]any
	}{
		{"aisdk", "/v1/ai-sdk/chat", aiSDK},
		{"agui", "/v1/ag-ui/run", agUI},
	}
	cases := []struct {
		name, query, body string
		want              string // the run's agent; "" when refused
		mention           string
	}{
		{"the query alone", "?agent=helper", "", "helper", ""},
		{"the body alone", "", "helper", "helper", ""},
		{"both, the same", "?agent=helper", "helper", "helper", ""},
		{"an empty query and the body", "?agent=", "helper", "helper", ""},
		{"the query and the body apart", "?agent=helper", "assistant", "", `the query names agent "helper" and the body agent "assistant"`},
		{"the query twice", "?agent=helper&agent=assistant", "", "", "the query names the agent 2 times (helper, assistant)"},
		{"an unknown agent in the query", "?agent=nobody", "", "", `agent "nobody" is not configured`},
		{"neither", "", "", "", "agent is missing"},
	}
	for _, route := range routes {
		for i, c := range cases {
			t.Run(route.path+" "+c.name, func(t *testing.T) {
				id := fmt.Sprintf("chat-agent-%s-%d", route.name, i)
				body := route.body(id, c.body)
				status, _, first := h.openStream(route.path+c.query, body, "")
				if c.want == "" {
					var refusal struct {
						Error struct{ Code, Message string }
					}
					_ = json.Unmarshal([]byte(first), &refusal)
					if status != http.StatusBadRequest || refusal.Error.Code != gateway.CodeInvalidRequest || !strings.Contains(refusal.Error.Message, c.mention) {
						t.Fatalf("%d %s; want 400 mentioning %s", status, first, c.mention)
					}
					if _, err := h.store.GetRun(context.Background(), id); err == nil {
						t.Fatal("a refused request created a run")
					}
					return
				}
				if status != http.StatusOK {
					t.Fatalf("%d %s", status, first)
				}
				run, err := h.store.GetRun(context.Background(), id)
				if err != nil || run.Agent != c.want {
					t.Fatalf("run %s: agent %q, %v; want %q", id, run.Agent, err, c.want)
				}
			})
		}
	}
}
