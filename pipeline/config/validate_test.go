package config_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

// everyMistake has one of each validation problem; Parse must report all of
// them together, in path order within each section.
const everyMistake = `
kafka: {topic_prefix: "my prefix", partitions: -1, max_message_bytes: 100}
stepworker: {concurrency: -1, lease: -1s, max_attempts: -2, sweep_interval: -1s, dispatch_timeout: -1m}
toolworker: {concurrency: -3, lease: -2s, default_timeout: -5s, queues: [ok, "bad/queue", ""]}
agents:
  a:
    model: {provider: gemini}
    tool_execution: sideways
    tools: [echo, x, echo]
    stop: {max_rounds: -1, timeout: -1m, token_budget: -5, consecutive_errors: -1,
           loop_detection: -2, content_match: "(unclosed", stop_on_tool: [""]}
  b:
    model: {provider: openai}
  c:
    model: {}
tools:
  none: {}
  two:
    executor: {builtin: echo, frontend: {}}
  nobuiltin:
    executor: {builtin: ls}
  mcpless:
    executor: {mcp: {server: nowhere}}
  agentless:
    executor: {agent: nobody, input: "{{.x"}
  inputonly:
    executor: {builtin: echo, input: "{{.x}}"}
  noserver:
    executor: {mcp: {tool: t}}
  badhttp:
    executor: {http: {url: "/relative", method: TRACE, headers_env: {Authorization: ""}, timeout: -1s}}
  schema_list:
    parameters: [a, b]
    executor: {frontend: {}}
  schema_type:
    parameters: {type: string}
    executor: {frontend: {}}
  settings:
    executor: {builtin: fail}
    queue: "pay ments"
    permission: maybe
    ask_when: "args.x > 1"
    resume_mode: redo
    on_timeout: explode
    approval_timeout: -1m
    timeout: -2s
    max_attempts: -1
  askdeny:
    executor: {builtin: fail}
    permission: deny
    ask_when: "true"
mcp_servers:
  empty: {}
  both: {command: [x], url: "http://h/mcp"}
  noprog: {command: [""]}
  badurl: {url: "ftp://h/mcp"}
`

func TestValidate_reports_every_problem_at_once(t *testing.T) {
	_, err := config.Parse([]byte(everyMistake))
	want := []string{
		`kafka.topic_prefix: "my prefix" has ' '; Kafka topic names allow only a-z A-Z 0-9 . _ -`,
		`kafka.partitions: -1 is negative`,
		`kafka.max_message_bytes: 100 is below 4096`,
		`stepworker.concurrency: -1 is negative`,
		`stepworker.lease: -1s is negative`,
		`stepworker.max_attempts: -2 is negative`,
		`stepworker.sweep_interval: -1s is negative`,
		`stepworker.dispatch_timeout: -1m0s is negative`,
		`toolworker.concurrency: -3 is negative`,
		`toolworker.lease: -2s is negative`,
		`toolworker.default_timeout: -5s is negative`,
		`toolworker.queues[1]: "bad/queue" has '/'; queue names allow only a-z A-Z 0-9 . _ -`,
		`toolworker.queues[2]: empty queue name`,
		`agents.a.model.provider: unknown provider "gemini"; want one of openai, script, synthetic`,
		`agents.a.tool_execution: "sideways"; want parallel or sequential`,
		`agents.a.tools[1]: unknown tool "x"`,
		`agents.a.tools[2]: tool "echo" is already listed at [0]`,
		`agents.a.stop.max_rounds: -1 is negative`,
		`agents.a.stop.timeout: -1m0s is negative`,
		`agents.a.stop.token_budget: -5 is negative`,
		`agents.a.stop.consecutive_errors: -1 is negative`,
		`agents.a.stop.loop_detection: -2 is negative`,
		`agents.a.stop.stop_on_tool[0]: empty tool name`,
		"agents.a.stop.content_match: error parsing regexp: missing closing ): `(unclosed`",
		`agents.b.model.name: required for provider "openai"`,
		`agents.c.model.provider: missing; want one of openai, script, synthetic`,
		`tools.agentless.executor.agent: unknown agent "nobody"; define it under agents`,
		`tools.agentless.executor.input: template: input:1: unclosed action`,
		`tools.askdeny.ask_when: only applies with permission "ask", not "deny"`,
		`tools.badhttp.executor.http.url: "/relative" is not an absolute http or https URL`,
		`tools.badhttp.executor.http.method: "TRACE"; want GET, POST, PUT, PATCH or DELETE`,
		`tools.badhttp.executor.http.headers_env.Authorization: empty environment variable name`,
		`tools.badhttp.executor.http.timeout: -1s is negative`,
		`tools.inputonly.executor.input: only applies with agent`,
		`tools.mcpless.executor.mcp.server: unknown MCP server "nowhere"; define it under mcp_servers`,
		`tools.nobuiltin.executor.builtin: unknown builtin "ls"; want one of echo, fail, pending, sleep`,
		`tools.none.executor: set exactly one of builtin, http, mcp, frontend, agent, plugin; none is set`,
		`tools.noserver.executor.mcp.server: missing; name a server of mcp_servers`,
		`tools.schema_list.parameters: want a JSON Schema mapping with type: object, got a list`,
		`tools.schema_type.parameters.type: want object (tool arguments are an object), got string "string"`,
		`tools.settings.queue: "pay ments" has ' '; queue names allow only a-z A-Z 0-9 . _ -`,
		`tools.settings.permission: "maybe"; want one of allow, deny, ask`,
		`tools.settings.ask_when: only applies with permission "ask", not "maybe"`,
		`tools.settings.resume_mode: "redo"; want one of replay, use_decision_as_result, pass_decision_to_tool`,
		`tools.settings.on_timeout: "explode"; want one of cancel, resume`,
		`tools.settings.approval_timeout: -1m0s is negative`,
		`tools.settings.timeout: -2s is negative`,
		`tools.settings.max_attempts: -1 is negative`,
		`tools.two.executor: set exactly one of builtin, http, mcp, frontend, agent, plugin; builtin and frontend are set`,
		`mcp_servers.badurl.url: "ftp://h/mcp" is not an absolute http or https URL`,
		`mcp_servers.both: set exactly one of command, url; both are set`,
		`mcp_servers.empty: set exactly one of command, url; none is set`,
		`mcp_servers.noprog.command[0]: empty program name`,
	}
	got := problemLines(err)
	if !slices.Equal(got, want) {
		for _, g := range got {
			if !slices.Contains(want, g) {
				t.Errorf("unexpected: %s", g)
			}
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("missing:    %s", w)
			}
		}
		t.Fatalf("problems (%d, want %d):\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	if !errors.Is(err, config.ErrInvalid) {
		t.Error("error does not match ErrInvalid")
	}
}

func TestValidate_accepts_each_allowed_value(t *testing.T) {
	cases := []struct{ name, yaml string }{
		{"sequential agent", "agents: {a: {model: {provider: script}, tool_execution: sequential}}"},
		{"synthetic model with its own settings", "agents: {a: {model: {provider: synthetic, latency: 20ms, calls_per_step: 2}}}"},
		{"openai model", "agents: {a: {model: {provider: openai, name: gpt-4o-mini, base_url: 'http://localhost:8000/v1', api_key_env: KEY}}}"},
		{"agent plugins are free-form", "agents: {a: {model: {provider: script}, plugins: {audit: {level: 3}, rate: [1, 2]}}}"},
		{"permission deny", "tools: {t: {executor: {builtin: echo}, permission: deny}}"},
		{"permission ask with ask_when", "tools: {t: {executor: {builtin: echo}, permission: ask, ask_when: 'args.amount > 100'}}"},
		{"use_decision_as_result", "tools: {t: {executor: {frontend: {}}, resume_mode: use_decision_as_result, on_timeout: resume}}"},
		{"pass_decision_to_tool", "tools: {t: {executor: {builtin: echo}, resume_mode: pass_decision_to_tool, approval_timeout: 1h}}"},
		{"http executor", "tools: {t: {executor: {http: {url: 'https://x.example/hook', method: put, headers_env: {Authorization: TOKEN}, timeout: 5s}}}}"},
		{"schema without type", "tools: {t: {executor: {builtin: echo}, parameters: {properties: {a: {type: string}}}}}"},
		{"queue with dots, dashes, underscores", "tools: {t: {executor: {builtin: echo}, queue: pay.ments_EU-1}}"},
		{"content_match regexp", "agents: {a: {model: {provider: script}, stop: {content_match: '(?i)^done\\b'}}}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := config.Parse([]byte(c.yaml)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestValidate_refuses_a_queue_whose_topic_name_is_too_long(t *testing.T) {
	q := strings.Repeat("q", 240)
	_, err := config.Parse([]byte("tools: {t: {executor: {builtin: echo}, queue: " + q + "}}"))
	want := `tools.t.queue: queue "` + q + `" makes the topic name 260 characters long; Kafka allows 249`
	if got := problemLines(err); !slices.Equal(got, []string{want}) {
		t.Fatalf("problems: %q", got)
	}
}

func TestValidate_on_a_config_changed_in_code(t *testing.T) {
	cfg := config.Default()
	a := cfg.Agents["assistant"]
	a.Tools = append(a.Tools, "lookup")
	cfg.Agents["assistant"] = a
	err := cfg.Validate()
	want := fmt.Sprintf(`agents.assistant.tools[%d]: unknown tool "lookup"`, len(a.Tools)-1)
	if got := problemLines(err); !slices.Equal(got, []string{want}) {
		t.Fatalf("problems: %q", got)
	}
}

func TestModel_Validate_for_a_model_a_run_brings(t *testing.T) {
	cases := []struct {
		model config.Model
		want  string
	}{
		{config.Model{Provider: "script"}, ""},
		{config.Model{Provider: "openai"}, `model.name: required for provider "openai"`},
		{config.Model{}, "model.provider: missing; want one of openai, script, synthetic"},
	}
	for _, c := range cases {
		err := c.model.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%+v: Validate() = %q, want %q", c.model, got, c.want)
		}
	}
}

func TestValidate_a_plugin_tool_needs_its_plugin_on_every_agent_that_lists_it(t *testing.T) {
	_, err := config.Parse([]byte(`
tools: {remember: {executor: {plugin: memory}}}
agents:
  with:    {model: {provider: script}, tools: [remember], plugins: {memory: {}}}
  without: {model: {provider: script}, tools: [remember]}
`))
	want := []string{`agents.without.tools[0]: tool "remember" is executed by plugin "memory", which this agent does not enable under plugins`}
	if got := problemLines(err); !slices.Equal(got, want) {
		t.Fatalf("problems: %q", got)
	}
}
