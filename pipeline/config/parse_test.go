package config_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/topics"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// problemLines splits a joined error into its lines.
func problemLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

func TestParse_design_example_verbatim_reports_only_its_undefined_tool(t *testing.T) {
	_, err := config.Parse(readFile(t, "testdata/design.yaml"))
	want := []string{`agents.assistant.tools[0]: unknown tool "lookup_order"`}
	if got := problemLines(err); !slices.Equal(got, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !errors.Is(err, config.ErrInvalid) {
		t.Errorf("error does not match ErrInvalid: %v", err)
	}
}

// designConfig is the DESIGN.md example with the one tool it lists but does
// not define added.
func designConfig(t *testing.T) *config.Config {
	t.Helper()
	data := strings.Replace(string(readFile(t, "testdata/design.yaml")), "\ntools:\n",
		"\ntools:\n  lookup_order:\n    executor: {builtin: echo}\n", 1)
	cfg, err := config.Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestParse_design_example_reads_every_field(t *testing.T) {
	cfg := designConfig(t)

	a, ok := cfg.Agent("assistant")
	if !ok {
		t.Fatal("agent assistant missing")
	}
	if a.Model.Provider != "openai" || a.Model.Name != "gpt-4o-mini" || a.Model.BaseURL != "..." || a.Model.APIKeyEnv != "OPENAI_API_KEY" {
		t.Errorf("model = %+v", a.Model)
	}
	if a.System != "You are ..." || !slices.Equal(a.Tools, []string{"lookup_order", "issue_refund"}) || a.Sequential() {
		t.Errorf("agent = %+v", a)
	}
	wantStop := config.Stop{
		MaxRounds: 20, Timeout: config.D(10 * time.Minute), TokenBudget: 200000, ConsecutiveErrors: 3,
		StopOnTool: []string{"finish"}, ContentMatch: "(?i)all done", LoopDetection: 4,
	}
	if !stopEqual(a.Stop, wantStop) {
		t.Errorf("stop = %+v, want %+v", a.Stop, wantStop)
	}

	r, _ := cfg.Tool("issue_refund")
	if r.Description != "Refund an order." || r.Executor.Kind() != config.ExecutorBuiltin || r.Executor.Builtin != "echo" ||
		r.Queue != "payments" || r.Permission != config.PermissionAsk || r.AskWhen != "args.amount > 100" ||
		r.ResumeMode != config.ResumeReplay || r.ApprovalTimeout.Duration != 30*time.Minute || r.OnTimeout != config.OnTimeoutCancel {
		t.Errorf("issue_refund = %+v", r)
	}
	var schema map[string]any
	if err := json.Unmarshal(r.Parameters, &schema); err != nil || schema["type"] != "object" {
		t.Errorf("issue_refund parameters = %s (%v)", r.Parameters, err)
	}

	s, _ := cfg.Tool("get_sum")
	if s.Executor.Kind() != config.ExecutorMCP || s.Executor.MCP.Server != "everything" || s.Executor.MCP.Tool != "get-sum" || s.Queue != topics.DefaultQueue {
		t.Errorf("get_sum = %+v (mcp %+v)", s, s.Executor.MCP)
	}

	if got := cfg.MCPServers["everything"].Command; !slices.Equal(got, []string{"npx", "-y", "@modelcontextprotocol/server-everything", "stdio"}) {
		t.Errorf("everything command = %q", got)
	}
	if got := cfg.MCPServers["remote"].URL; got != "http://127.0.0.1:9000/mcp" {
		t.Errorf("remote url = %q", got)
	}
	if got, want := cfg.Queues(), []string{"default", "payments"}; !slices.Equal(got, want) {
		t.Errorf("Queues() = %q, want %q", got, want)
	}
}

func stopEqual(a, b config.Stop) bool {
	return a.MaxRounds == b.MaxRounds && a.Timeout == b.Timeout && a.TokenBudget == b.TokenBudget &&
		a.ConsecutiveErrors == b.ConsecutiveErrors && slices.Equal(a.StopOnTool, b.StopOnTool) &&
		a.ContentMatch == b.ContentMatch && a.LoopDetection == b.LoopDetection
}

func TestParse_applies_defaults_to_what_the_file_leaves_out(t *testing.T) {
	cfg, err := config.Parse([]byte(`
agents:
  a:
    model: {provider: script}
tools:
  h:
    executor: {http: {url: "https://example.com/hook"}}
  m:
    executor: {mcp: {server: s}}
mcp_servers:
  s: {url: "http://127.0.0.1:9000/mcp"}
`))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"kafka.topic_prefix", cfg.Kafka.TopicPrefix, "stepwise."},
		{"kafka.partitions", cfg.Kafka.Partitions, int32(8)},
		{"kafka.max_message_bytes", cfg.Kafka.MaxMessageBytes, 1 << 20},
		{"stepworker.concurrency", cfg.StepWorker.Concurrency, 64},
		{"stepworker.lease", cfg.StepWorker.Lease.Duration, 30 * time.Second},
		{"stepworker.max_attempts", cfg.StepWorker.MaxAttempts, 3},
		{"stepworker.sweep_interval", cfg.StepWorker.SweepInterval.Duration, 2 * time.Second},
		{"stepworker.dispatch_timeout", cfg.StepWorker.DispatchTimeout.Duration, 5 * time.Minute},
		{"toolworker.concurrency", cfg.ToolWorker.Concurrency, 64},
		{"toolworker.lease", cfg.ToolWorker.Lease.Duration, 30 * time.Second},
		{"toolworker.default_timeout", cfg.ToolWorker.DefaultTimeout.Duration, 60 * time.Second},
		{"toolworker.queues", len(cfg.ToolWorker.Queues), 0},
		{"agents.a.tool_execution", cfg.Agents["a"].ToolExecution, "parallel"},
		{"tools.h.queue", cfg.Tools["h"].Queue, topics.DefaultQueue},
		{"tools.h.permission", cfg.Tools["h"].Permission, "allow"},
		{"tools.h.resume_mode", cfg.Tools["h"].ResumeMode, "replay"},
		{"tools.h.on_timeout", cfg.Tools["h"].OnTimeout, "cancel"},
		{"tools.h.timeout", cfg.Tools["h"].Timeout.Duration, time.Duration(0)},
		{"tools.h.max_attempts", cfg.Tools["h"].MaxAttempts, 0},
		{"tools.h.executor.http.method", cfg.Tools["h"].Executor.HTTP.Method, "POST"},
		{"tools.m.executor.mcp.tool", cfg.Tools["m"].Executor.MCP.Tool, "m"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestParse_keeps_values_the_file_sets(t *testing.T) {
	cfg, err := config.Parse([]byte(`
kafka: {topic_prefix: acme-, partitions: 3}
stepworker: {concurrency: 5, lease: 1m, max_attempts: 7, sweep_interval: 500ms, dispatch_timeout: 1h30m}
toolworker: {concurrency: 9, lease: 45s, default_timeout: 2m, queues: [payments, default]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Kafka.TopicPrefix != "acme-" || cfg.Kafka.Partitions != 3 {
		t.Errorf("kafka = %+v", cfg.Kafka)
	}
	if got := cfg.Kafka.Names().RunSteps(); got != "acme-run-steps" {
		t.Errorf("Names().RunSteps() = %q", got)
	}
	w := cfg.StepWorker
	if w.Concurrency != 5 || w.Lease.Duration != time.Minute || w.MaxAttempts != 7 ||
		w.SweepInterval.Duration != 500*time.Millisecond || w.DispatchTimeout.Duration != 90*time.Minute {
		t.Errorf("stepworker = %+v", w)
	}
	tw := cfg.ToolWorker
	if tw.Concurrency != 9 || tw.Lease.Duration != 45*time.Second || tw.DefaultTimeout.Duration != 2*time.Minute ||
		!slices.Equal(tw.Queues, []string{"payments", "default"}) {
		t.Errorf("toolworker = %+v", tw)
	}
}

func TestParse_adds_the_builtin_tools_the_file_does_not_define(t *testing.T) {
	cfg, err := config.Parse([]byte(`
agents:
  a: {model: {provider: script}, tools: [echo, sleep, fail]}
tools:
  echo:
    description: my own echo
    executor: {builtin: echo}
    queue: special
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range config.Builtins() {
		tool, ok := cfg.Tool(name)
		if !ok {
			t.Fatalf("tool %s missing", name)
		}
		if tool.Executor.Builtin != name {
			t.Errorf("%s executor = %+v", name, tool.Executor)
		}
		if name == "echo" {
			if tool.Description != "my own echo" || tool.Queue != "special" {
				t.Errorf("the file's echo was replaced: %+v", tool)
			}
			continue
		}
		if tool.Queue != topics.DefaultQueue || tool.Permission != config.PermissionAllow || len(tool.Parameters) == 0 {
			t.Errorf("implicit %s = %+v", name, tool)
		}
	}
	if got, want := cfg.Queues(), []string{"default", "special"}; !slices.Equal(got, want) {
		t.Errorf("Queues() = %q, want %q", got, want)
	}
}

func TestParse_empty_input_gives_defaults_and_builtins(t *testing.T) {
	for _, in := range [][]byte{nil, []byte(""), []byte("# nothing\n"), []byte("# only\n\n# comments\n"), []byte("---\n"), []byte("{}")} {
		cfg, err := config.Parse(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if len(cfg.Agents) != 0 || len(cfg.Tools) != len(config.Builtins()) || !slices.Equal(cfg.Queues(), []string{"default"}) {
			t.Errorf("%q: agents %d tools %d queues %q", in, len(cfg.Agents), len(cfg.Tools), cfg.Queues())
		}
	}
}

func TestParse_reports_shape_problems_with_their_paths(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "unknown fields at every level, all at once",
			yaml: `
kafak: {}
agents:
  a:
    modle: {provider: script}
    model: {provider: script}
    stop: {max_round: 3}
tools:
  t:
    executor: {builtin: echo, frontend: {x: 1}}
    queeu: q
`,
			want: []string{
				"agents.a.modle: unknown field (known: description, handoff_history, handoffs, model, plugins, stop, system, tool_execution, tools)",
				"agents.a.stop.max_round: unknown field (known: consecutive_errors, content_match, loop_detection, max_rounds, stop_on_tool, timeout, token_budget)",
				"kafak: unknown field (known: agents, auth, budgets, decisions, gateway, kafka, limits, mcp_servers, run_requests, runs, stepworker, tools, toolworker)",
				"tools.t.executor.frontend.x: unknown field (this mapping takes no fields)",
				"tools.t.queeu: unknown field (known: approval_timeout, ask_when, description, executor, max_attempts, on_timeout, parameters, permission, queue, resume_mode, timeout)",
			},
		},
		{
			name: "keys match exactly, not in any case",
			yaml: "Agents: {}\n",
			want: []string{"Agents: unknown field (known: agents, auth, budgets, decisions, gateway, kafka, limits, mcp_servers, run_requests, runs, stepworker, tools, toolworker)"},
		},
		{
			name: "wrong kinds",
			yaml: `
kafka: {partitions: many}
stepworker: {concurrency: 1.5, lease: 30}
agents:
  a:
    model: {provider: 7}
    tools: echo
    stop: {timeout: 10, stop_on_tool: [1]}
mcp_servers:
  s: {command: npx}
`,
			want: []string{
				"agents.a.model.provider: want a string, got number 7",
				`agents.a.stop.stop_on_tool[0]: want a string, got number 1`,
				`agents.a.stop.timeout: want a duration string with a unit, like "30s", "10m" or "1h30m"; got number 10`,
				`agents.a.tools: want a list, got string "echo"`,
				`kafka.partitions: want an integer, got string "many"`,
				`mcp_servers.s.command: want a list, got string "npx"`,
				`stepworker.concurrency: want an integer, got number 1.5`,
				`stepworker.lease: want a duration string with a unit, like "30s", "10m" or "1h30m"; got number 30`,
			},
		},
		{
			name: "top level that is not a mapping",
			yaml: "- a\n- b\n",
			want: []string{"want a mapping, got a list"},
		},
		{
			name: "model that is not a mapping",
			yaml: "agents: {a: {model: gpt-4o}}\n",
			want: []string{`agents.a.model: want a mapping, got string "gpt-4o"`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.yaml))
			if got := problemLines(err); !slices.Equal(got, c.want) {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Errorf("error does not match ErrInvalid")
			}
		})
	}
}

func TestParse_rejects_bad_yaml_and_duplicate_keys(t *testing.T) {
	for _, in := range []string{
		"agents: [unclosed\n",
		"agents: {}\nagents: {}\n",
		"tools:\n  t: {executor: {builtin: echo}}\n  t: {executor: {builtin: fail}}\n",
	} {
		_, err := config.Parse([]byte(in))
		if err == nil || !errors.Is(err, config.ErrInvalid) {
			t.Errorf("%q: err = %v, want an ErrInvalid", in, err)
		}
	}
}

func TestLoad_names_the_file_in_its_errors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(path, []byte("agents: {a: {model: {provider: nope}}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `agents.a.model.provider: unknown provider "nope"`) {
		t.Errorf("Load(bad) = %v", err)
	}
	if !errors.Is(err, config.ErrInvalid) {
		t.Errorf("Load(bad) error does not match ErrInvalid")
	}

	if _, err := config.Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want os.ErrNotExist", err)
	}

	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, config.DefaultYAML(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(good); err != nil {
		t.Errorf("Load(good) = %v", err)
	}
}

func TestParse_limits(t *testing.T) {
	cfg, err := config.Parse([]byte(`
limits:
  models:
    "openai:gpt-4o-mini": {concurrency: 10, rpm: 500, tpm: 200000, tenant_share: 0.25}
    synthetic: {concurrency: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	lim, ok := cfg.Limits.Model("openai:gpt-4o-mini")
	if !ok || lim.Concurrency != 10 || lim.RPM != 500 || lim.TPM != 200000 || lim.TenantSlots() != 3 {
		t.Fatalf("limit %+v, %v", lim, ok)
	}
	if _, ok := cfg.Limits.Model("script"); ok {
		t.Fatal("a model without a limit has one")
	}
	if k := (config.Model{Provider: "openai", Name: "gpt-4o-mini"}).Key(); k != "openai:gpt-4o-mini" {
		t.Fatalf("key %q", k)
	}
	_, err = config.Parse([]byte(`
limits:
  models:
    a: {concurrency: -1, rpm: -2, tpm: -3, tenant_share: 2}
    b: {rpm: 10, tenant_share: 0.5}
`))
	for _, want := range []string{"limits.models.a.concurrency", "limits.models.a.rpm", "limits.models.a.tpm", "limits.models.a.tenant_share: 2", "limits.models.b.tenant_share: shares concurrency"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %q", err, want)
		}
	}
}

func TestParse_budgets_and_prices(t *testing.T) {
	cfg, err := config.Parse([]byte(`
budgets:
  tenants:
    acme: {tokens: 5000000, cost_usd: 40}
    lab: {cost_usd: 0.5}
  prices:
    "openai:gpt-4o-mini": {input_per_mtok: 0.15, output_per_mtok: 0.6}
`))
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := cfg.Budgets.Tenant("lab"); !ok || b.Tokens != 0 || b.MicroUSD() != 500000 {
		t.Fatalf("lab's budget %+v, %v", b, ok)
	}
	if _, ok := cfg.Budgets.Tenant("nobody"); ok {
		t.Fatal("a tenant without a budget has one")
	}
	p := cfg.Budgets.Price("openai:gpt-4o-mini")
	// 1,000 input tokens at 0.15 and 500 output at 0.6 USD a million: 450 micro-USD.
	if got := p.MicroUSD(1000, 500); got != 450 {
		t.Fatalf("cost %d micro-USD, want 450", got)
	}
	if got := p.Most(2000); got != 1200 {
		t.Fatalf("a reservation of 2000 tokens holds %d micro-USD, want 1200", got)
	}
	if got := cfg.Budgets.Price("script").MicroUSD(1000, 1000); got != 0 {
		t.Fatalf("a model without a price costs %d", got)
	}
	_, err = config.Parse([]byte(`
budgets:
  reserve_tokens: -5
  tenants:
    a: {}
    b: {tokens: -1}
  prices:
    m: {input_per_mtok: -1, output_per_mtok: 1}
    n: {input_per_mtok: 1, output_per_mtok: 1, batch_output_per_mtok: -2}
`))
	for _, want := range []string{"budgets.reserve_tokens", "budgets.tenants.a: tokens 0, cost_usd 0", "budgets.tenants.b", "budgets.prices.m: input_per_mtok -1",
		"budgets.prices.n: input_per_mtok 1, output_per_mtok 1, batch_input_per_mtok 0.5, batch_output_per_mtok -2"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %q", err, want)
		}
	}
}

func TestParse_a_batch_price_is_half_the_live_one_unless_set(t *testing.T) {
	cfg, err := config.Parse([]byte(`
budgets:
  prices:
    halved: {input_per_mtok: 2.5, output_per_mtok: 10}
    set: {input_per_mtok: 2.5, output_per_mtok: 10, batch_input_per_mtok: 2, batch_output_per_mtok: 0}
    input_set: {input_per_mtok: 2.5, output_per_mtok: 10, batch_input_per_mtok: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key           string
		input, output float64
	}{
		{"halved", 1.25, 5},
		{"set", 2, 0},
		{"input_set", 1, 5},
		{"unpriced", 0, 0},
	} {
		if got := cfg.Budgets.Price(c.key).Batch(); got.InputPerMTok != c.input || got.OutputPerMTok != c.output {
			t.Errorf("%s: batch price %+v, want input %g, output %g per million", c.key, got, c.input, c.output)
		}
	}
}
